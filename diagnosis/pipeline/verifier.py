"""Verifier stage: does the checked evidence support each claim? The verdict is computed by code."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

ClaimVerification = Literal[
    "direct_observation", "reasonable_inference", "overstated", "unsupported", "external_unknown", "contradicted"
]
FactVerification = Literal["direct_evidence", "indirect_support", "no_evidence", "contradicted"]
Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]


class ClaimCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str
    verification: ClaimVerification
    detail: str
    evidence_refs: list[str]


class FactCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fact: str
    is_critical: bool
    verification: FactVerification
    detail: str
    evidence_refs: list[str]


class VerifierOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_checks: list[ClaimCheck]
    facts_checked: list[FactCheck]
    rationale: str
    # The model may say these; code recomputes both and never trusts them.
    verdict: Verdict | None = None
    groundedness_score: float | None = None
