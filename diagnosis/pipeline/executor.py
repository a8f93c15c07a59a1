"""Executor stage: gathers evidence with the tools and states claims that cite it exactly."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ANSWER_VERSION = "executor_evidence_v2"

ClaimType = Literal["observation", "negative_observation", "root_cause", "risk"]


class EvidenceBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_name: str
    # Optional so a missing id can be seen (and auto-backfilled) instead of failing the parse.
    source_invocation_id: int | None
    raw_path: str | None
    evidence_excerpt: str


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str
    claim_type: ClaimType
    claim_text: str
    evidence_bindings: list[EvidenceBinding]


class ExecutorOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer_version: Literal["executor_evidence_v2"] = ANSWER_VERSION
    claims: list[Claim]
    hypotheses: list[str] = Field(description="suspicions, never confirmed facts")
    missing_info: list[str]
    recommended_actions: list[str] = Field(description="evidence-gathering actions only, no fixes")
    diagnosis_summary: str
    user_facing_answer: str = Field(description="Chinese; debug/fallback only, never shown as is")
