import pytest

from diagnosis.pipeline.records import verifier_record_read
from diagnosis.pipeline.scope import SCOPE_RULE
from diagnosis.selectors.evidence import session_evidence, session_rounds, verifier_rounds
from tests.factories import CompletedSessionFactory, claim_blocked

pytestmark = pytest.mark.django_db


def test_rounds_are_listed_once_each_oldest_first():
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    record = verifier_record_read(session.self_evaluation["verifier_evaluation"])

    rounds = verifier_rounds(record=record)

    assert [(r.round, r.verdict) for r in rounds] == [(1, "LOW_CONFID"), (2, "PASS")]
    assert rounds[1] is record  # the final round once, though the record repeats it under `rounds`


def test_each_round_pairs_claims_with_their_checked_bindings_and_class():
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    first, second = session_rounds(session=session)
    assert (first.record.verdict, second.record.verdict) == ("LOW_CONFID", "PASS")
    assert [claim.verification for claim in first.claims] == ["direct_observation", "unsupported"]
    (binding,) = second.claims[0].bindings
    assert binding.passed
    assert "HighMemoryUsage firing service=order-service" in binding.ref_text
    assert binding.record.alert_name == "HighMemoryUsage"
    assert second.record.retry_context["round"] == 1


def test_the_evidence_keeps_only_allowed_claims_and_their_passed_bindings():
    session = CompletedSessionFactory(verdict="LOW_CONFID")

    evidence = session_evidence(session=session)

    assert [claim.claim_id for claim in evidence.claims] == ["c1"]
    assert all(binding.passed for claim in evidence.claims for binding in claim.bindings)
    assert evidence.hidden_claim_count == 1


def test_a_blocked_claim_is_kept_out_of_the_evidence_with_the_rule_that_blocked_it():
    session = CompletedSessionFactory(verdict="PASS")
    claim_blocked(session, claim_id="c1", rule=SCOPE_RULE)

    evidence = session_evidence(session=session)

    assert (evidence.claims, evidence.verified_bindings, evidence.hidden_claim_count) == ([], [], 0)
    assert evidence.blocked_rules == [SCOPE_RULE]
    (claim,) = session_rounds(session=session)[-1].claims
    assert (claim.claim_id, claim.blocked_by, claim.shown) == ("c1", SCOPE_RULE, False)
