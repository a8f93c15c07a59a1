"""The one rule of which claims an output type may show the user."""

import pytest

from diagnosis.pipeline.disclosure import claim_shown

ALLOWED = ("direct_observation", "reasonable_inference")
NOT_ALLOWED = ("overstated", "unsupported", "external_unknown", "contradicted")


@pytest.mark.parametrize("output_type", ["NORMAL", "LOW_CONFID_WITH_DISCLAIMER"])
@pytest.mark.parametrize("verification", ALLOWED)
def test_an_answer_shows_the_claims_the_verifier_allowed(output_type, verification):
    assert claim_shown(output_type=output_type, verification=verification, blocked=False)


@pytest.mark.parametrize("output_type", ["NORMAL", "LOW_CONFID_WITH_DISCLAIMER", "DEGRADED"])
@pytest.mark.parametrize("verification", NOT_ALLOWED)
def test_no_answer_shows_a_claim_the_verifier_did_not_allow(output_type, verification):
    assert not claim_shown(output_type=output_type, verification=verification, blocked=False)


@pytest.mark.parametrize("verification", ALLOWED)
def test_a_degraded_answer_shows_no_claim_at_all(verification):
    assert not claim_shown(output_type="DEGRADED", verification=verification, blocked=False)


def test_a_claim_a_guard_blocked_is_never_shown():
    assert not claim_shown(output_type="NORMAL", verification="direct_observation", blocked=True)


def test_a_session_without_an_answer_shows_no_claim():
    assert not claim_shown(output_type="", verification="direct_observation", blocked=False)
