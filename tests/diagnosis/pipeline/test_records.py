"""The verifier_evaluation slot as typed records: validated when built, one reader for stored rows."""

import pytest
from pydantic import ValidationError

from diagnosis.pipeline.records import ComposerOutcome, RoundRecord, VerifierEvaluation, verifier_record_read
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.services.sessions import session_start
from tests.factories import CompletedSessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


def stored_slot(session) -> dict:
    return self_evaluation_of(session=session)[VERIFIER_EVALUATION]


def test_a_finished_session_stores_a_verifier_evaluation_that_reads_back_unchanged():
    session = session_start(query="只确认 order-service 是否存在 HighMemoryUsage 告警", run_inline=True)
    slot = stored_slot(session)

    record = verifier_record_read(slot)

    assert isinstance(record, VerifierEvaluation)
    assert record.model_dump(mode="json") == slot
    assert record.output_type == session.output_type
    # A session of one round has no earlier round: the record is stored once, not again under `rounds`.
    assert record.rounds == []


def test_a_record_is_validated_when_it_is_built():
    slot = stored_slot(
        session_start(query="只确认 order-service 是否存在 HighMemoryUsage 告警", run_inline=True)
    )

    with pytest.raises(ValidationError):
        VerifierEvaluation.model_validate(slot | {"verdict": "MAYBE"})
    with pytest.raises(ValidationError):
        ComposerOutcome(status="rewritten")


def test_a_composer_outcome_keeps_only_the_keys_of_its_status():
    assert ComposerOutcome(status="skipped", detail="DEGRADED").model_dump() == {
        "status": "skipped",
        "detail": "DEGRADED",
    }


def test_a_retried_round_still_running_reads_as_a_round_record():
    slot = stored_slot(CompletedSessionFactory(verdict="PASS"))
    # A round record is the final record without what the composer and the routing add.
    slot.pop("composer_output")
    slot.pop("output_type")

    assert type(verifier_record_read(slot)) is RoundRecord


@pytest.mark.parametrize("raw", [None, {}, [], {"verdict": "PASS"}, "garbage"])
def test_a_missing_or_unreadable_record_reads_as_none(raw):
    assert verifier_record_read(raw) is None
