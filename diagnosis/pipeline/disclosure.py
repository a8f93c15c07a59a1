"""Which claims an output type may show the user: the one rule.

The chat panel, the AIOps report and the admin's "shown to the user" mark all ask it. A DEGRADED
answer shows no claim text at all, only gatekeeper-verified evidence; NORMAL and the disclaimer show
the claims the verifier allowed (direct observation, reasonable inference) that no guard blocked.
"""

from __future__ import annotations

from diagnosis.pipeline.routing import OutputType

SHOWN_VERIFICATIONS = frozenset({"direct_observation", "reasonable_inference"})
OUTPUT_TYPES_SHOWING_CLAIMS = frozenset({OutputType.NORMAL, OutputType.LOW_CONFID_WITH_DISCLAIMER})


def output_type_shows_claims(output_type: str) -> bool:
    return output_type in OUTPUT_TYPES_SHOWING_CLAIMS


def claim_shown(*, output_type: str, verification: str, blocked: bool) -> bool:
    return output_type_shows_claims(output_type) and verification in SHOWN_VERIFICATIONS and not blocked
