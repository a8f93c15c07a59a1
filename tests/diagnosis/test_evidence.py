import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.evidence import (
    Highlight,
    excerpt_highlight,
    session_panel,
    session_rounds,
    verifier_rounds,
)
from tests.factories import CompletedSessionFactory

pytestmark = pytest.mark.django_db

REF = "[2026-11-29 14:52:00][ERROR][order-service] HikariPool-1 - Connection is not available"


@pytest.mark.parametrize(
    ("excerpt", "marked"),
    [
        ("HikariPool-1 - Connection", "HikariPool-1 - Connection"),
        ("hikaripool-1 - connection", "HikariPool-1 - Connection"),
        ("HikariPool-1  Connection is not available", "HikariPool-1 - Connection is not available"),
        ("ＨｉｋａｒｉＰｏｏｌ－１ Connection", "HikariPool-1 - Connection"),
        ("HikariPool-1 - Connection is NOT avail", "HikariPool-1 - Connection is not avail"),
    ],
)
def test_excerpt_is_marked_where_it_sits_in_the_tool_output(excerpt, marked):
    highlight = excerpt_highlight(text=REF, excerpt=excerpt)
    assert highlight.match == marked
    assert highlight.before + highlight.match + highlight.after == REF


def test_a_close_but_inexact_excerpt_is_marked_approximately():
    highlight = excerpt_highlight(text=REF, excerpt="HikariPool-1 Connection is unavailable")
    assert highlight.match.startswith("HikariPool-1 - Connection")


def test_an_excerpt_that_is_not_there_marks_nothing():
    assert excerpt_highlight(text=REF, excerpt="payment-service Redis 超时 3000ms") == Highlight(REF, "", "")


def test_rounds_are_listed_once_each_oldest_first():
    latest = {"round": 2, "verdict": "PASS", "rounds": [{"round": 1, "verdict": "LOW_CONFID"}, {"round": 2}]}
    rounds = verifier_rounds(verifier_evaluation=latest)
    assert [(r["round"], r["verdict"]) for r in rounds] == [(1, "LOW_CONFID"), (2, "PASS")]
    assert "rounds" not in rounds[1]


def test_each_round_pairs_claims_with_their_checked_bindings_and_class():
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    first, second = session_rounds(session=session)
    assert (first.verdict, second.verdict) == ("LOW_CONFID", "PASS")
    assert [claim.verification for claim in first.claims] == ["direct_observation", "unsupported"]
    (binding,) = second.claims[0].bindings
    assert binding.passed
    assert binding.ref.match == "HighMemoryUsage firing service=order-service"
    assert binding.record["alert_name"] == "HighMemoryUsage"
    assert second.retry_context["round"] == 1


def test_the_chat_panel_shows_only_allowed_claims_and_their_passed_bindings():
    session = CompletedSessionFactory(verdict="LOW_CONFID")
    panel = session_panel(session=session)
    assert [claim.claim_id for claim in panel.claims] == ["c1"]
    assert panel.hidden_claim_count == 1


def test_scope_blocked_claims_never_reach_the_chat_panel():
    session = CompletedSessionFactory(verdict="PASS")
    evaluation = session.self_evaluation["verifier_evaluation"]
    evaluation["gatekeeper_result"]["warnings"].append(
        {"rule": "scope.excluded_topic", "message": "超出提问范围", "claim_id": "c1"}
    )
    session.save()
    panel = session_panel(session=session)
    assert panel.claims == []
    assert panel.verified_bindings == []
    assert panel.hidden_claim_count == 1


def test_a_rejected_round_shows_no_claim_and_no_failed_excerpt():
    panel = session_panel(session=CompletedSessionFactory(verdict="REJECT"))
    assert panel.claims == []
    assert panel.verified_bindings == []
    assert panel.output_type_tone == "bad"


def test_a_running_session_has_no_evidence_yet():
    session = CompletedSessionFactory(verdict="PASS")
    DiagnosisSession.objects.filter(pk=session.pk).update(status=DiagnosisSession.Status.RUNNING)
    session.refresh_from_db()
    panel = session_panel(session=session)
    assert panel.live
    assert panel.claims == []
