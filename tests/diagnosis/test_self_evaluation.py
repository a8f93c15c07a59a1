import threading
import time

import pytest
from django.db import connection, transaction

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.self_evaluation import self_evaluation_of
from diagnosis.services.self_evaluation import self_evaluation_merge
from tests.factories import DiagnosisSessionFactory

VERIFIER_VALUE = {
    "verdict": "LOW_CONFID",
    "groundedness_score": 0.42,
    "gatekeeper_result": {"severity": "warning", "issues": []},
    "round": 1,
}


@pytest.mark.django_db
def test_merge_replaces_only_its_own_slot():
    session = DiagnosisSessionFactory(
        self_evaluation={
            "rule_evaluation": {"evidence_score": 65},
            "verifier_evaluation": {"verdict": "PASS"},
        }
    )

    container = self_evaluation_merge(
        session_pk=session.pk, slot="rule_evaluation", value={"evidence_score": 30, "source": "rule"}
    )

    session.refresh_from_db()
    assert session.self_evaluation == container
    assert container == {
        "rule_evaluation": {"evidence_score": 30, "source": "rule"},
        "verifier_evaluation": {"verdict": "PASS"},
    }


@pytest.mark.django_db
def test_merge_into_an_empty_container_creates_the_slot():
    session = DiagnosisSessionFactory()

    self_evaluation_merge(session_pk=session.pk, slot="aiops_rule_evaluation", value={"checks": []})

    session.refresh_from_db()
    assert session.self_evaluation == {"aiops_rule_evaluation": {"checks": []}}


@pytest.mark.django_db
def test_unknown_slot_is_rejected_and_nothing_is_written():
    session = DiagnosisSessionFactory(self_evaluation={"rule_evaluation": {"evidence_score": 65}})

    with pytest.raises(ValueError, match="unknown self_evaluation slot"):
        self_evaluation_merge(session_pk=session.pk, slot="evidence_score", value={"x": 1})

    session.refresh_from_db()
    assert session.self_evaluation == {"rule_evaluation": {"evidence_score": 65}}


@pytest.mark.django_db
def test_legacy_root_keys_are_wrapped_on_read_without_touching_the_row():
    legacy = {
        "evidence_score": 65,
        "factors": [],
        "verdict": "PASS",
        "groundedness_score": 0.8,
        "rationale": "ok",
    }
    session = DiagnosisSessionFactory(self_evaluation=legacy)

    container = self_evaluation_of(session=session)

    assert container == {
        "rule_evaluation": {"evidence_score": 65, "factors": []},
        "verifier_evaluation": {"verdict": "PASS", "groundedness_score": 0.8, "rationale": "ok"},
    }
    session.refresh_from_db()
    assert session.self_evaluation == legacy


@pytest.mark.django_db
def test_legacy_groundedness_alone_is_wrapped_into_the_verifier_slot():
    session = DiagnosisSessionFactory(self_evaluation={"groundedness_score": 0.3})

    assert self_evaluation_of(session=session) == {"verifier_evaluation": {"groundedness_score": 0.3}}


@pytest.mark.django_db
def test_legacy_root_keys_are_wrapped_when_another_slot_is_merged():
    session = DiagnosisSessionFactory(self_evaluation={"evidence_score": 65, "source": "rule", "factors": []})

    self_evaluation_merge(session_pk=session.pk, slot="verifier_evaluation", value=VERIFIER_VALUE)

    session.refresh_from_db()
    assert session.self_evaluation == {
        "rule_evaluation": {"evidence_score": 65, "source": "rule", "factors": []},
        "verifier_evaluation": VERIFIER_VALUE,
    }


@pytest.mark.django_db
def test_legacy_root_keys_are_dropped_when_their_own_slot_is_merged():
    session = DiagnosisSessionFactory(self_evaluation={"verdict": "REJECT", "groundedness_score": 0.1})

    self_evaluation_merge(session_pk=session.pk, slot="verifier_evaluation", value=VERIFIER_VALUE)

    session.refresh_from_db()
    assert session.self_evaluation == {"verifier_evaluation": VERIFIER_VALUE}


@pytest.mark.django_db
def test_slot_written_after_legacy_data_wins_over_it():
    session = DiagnosisSessionFactory(
        self_evaluation={"evidence_score": 10, "rule_evaluation": {"evidence_score": 65, "source": "rule"}}
    )

    assert self_evaluation_of(session=session) == {
        "rule_evaluation": {"evidence_score": 65, "source": "rule"}
    }


@pytest.mark.django_db
def test_verifier_slot_sets_the_denormalised_review_columns():
    session = DiagnosisSessionFactory()

    self_evaluation_merge(session_pk=session.pk, slot="verifier_evaluation", value=VERIFIER_VALUE)

    session.refresh_from_db()
    assert (session.verdict, session.groundedness_score, session.gatekeeper_severity) == (
        "LOW_CONFID",
        0.42,
        "warning",
    )


@pytest.mark.django_db
def test_verifier_slot_without_gatekeeper_result_clears_the_severity():
    session = DiagnosisSessionFactory(verdict="PASS", groundedness_score=0.9, gatekeeper_severity="pass")

    self_evaluation_merge(
        session_pk=session.pk,
        slot="verifier_evaluation",
        value={"verdict": "REJECT", "groundedness_score": 0.0},
    )

    session.refresh_from_db()
    assert (session.verdict, session.groundedness_score, session.gatekeeper_severity) == ("REJECT", 0.0, "")


@pytest.mark.django_db
def test_other_slots_leave_the_review_columns_alone():
    session = DiagnosisSessionFactory(verdict="PASS", groundedness_score=0.9, gatekeeper_severity="pass")

    self_evaluation_merge(session_pk=session.pk, slot="rule_evaluation", value={"evidence_score": 0})

    session.refresh_from_db()
    assert (session.verdict, session.groundedness_score, session.gatekeeper_severity) == ("PASS", 0.9, "pass")


@pytest.mark.django_db
def test_merge_keeps_a_status_written_meanwhile_by_someone_else():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    DiagnosisSession.objects.filter(pk=session.pk).update(status=DiagnosisSession.Status.COMPLETED)

    self_evaluation_merge(session_pk=session.pk, slot="rule_evaluation", value={"evidence_score": 30})

    session.refresh_from_db()
    assert session.status == DiagnosisSession.Status.COMPLETED


def _merge_in_thread(*, session_pk: int, slot: str, values: list[dict], errors: list, barrier=None) -> None:
    try:
        if barrier is not None:
            barrier.wait(timeout=10)
        for value in values:
            self_evaluation_merge(session_pk=session_pk, slot=slot, value=value)
    except Exception as exc:  # reported by the test thread, which alone can fail the test
        errors.append(exc)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_writers_on_different_slots_both_survive(postgres_only):
    session = DiagnosisSessionFactory()
    writes = 40
    barrier = threading.Barrier(2)
    errors: list = []
    threads = [
        threading.Thread(
            target=_merge_in_thread,
            kwargs={
                "session_pk": session.pk,
                "slot": slot,
                "values": [{"write": n} for n in range(writes)],
                "errors": errors,
                "barrier": barrier,
            },
        )
        for slot in ("rule_evaluation", "verifier_evaluation")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert errors == []
    session.refresh_from_db()
    assert session.self_evaluation == {
        "rule_evaluation": {"write": writes - 1},
        "verifier_evaluation": {"write": writes - 1},
    }


def _backends_waiting_for_a_lock() -> int:
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps serving its first activity snapshot unless cleared.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_writer_waits_for_the_row_lock_and_then_rereads_the_container(postgres_only):
    session = DiagnosisSessionFactory()
    errors: list = []
    rule_writer = threading.Thread(
        target=_merge_in_thread,
        kwargs={
            "session_pk": session.pk,
            "slot": "rule_evaluation",
            "values": [{"evidence_score": 65}],
            "errors": errors,
        },
    )

    with transaction.atomic():
        DiagnosisSession.objects.select_for_update().get(pk=session.pk)
        rule_writer.start()
        deadline = time.monotonic() + 10
        while _backends_waiting_for_a_lock() == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _backends_waiting_for_a_lock() == 1
        self_evaluation_merge(session_pk=session.pk, slot="verifier_evaluation", value=VERIFIER_VALUE)
    rule_writer.join(timeout=30)

    assert errors == []
    session.refresh_from_db()
    assert session.self_evaluation == {
        "rule_evaluation": {"evidence_score": 65},
        "verifier_evaluation": VERIFIER_VALUE,
    }
