"""The `verifier_evaluation` slot as typed records, validated when they are built.

`RoundRecord` is one round's record; a retried round is stored as it is, the final one as a
`VerifierEvaluation` (the round plus the composer's outcome and the output type), carrying the
earlier rounds under `rounds`. `verifier_record_read` is the one reader of stored records.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_serializer

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.contracts import Claim, ExecutorOutput, PlannerOutput
from diagnosis.pipeline.gatekeeper import GatekeeperResult, RuleMessage
from diagnosis.pipeline.routing import OutputType, Route
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.verdict import Verification

TRACEABILITY_VERSION = "v1"


class ComposerOutcome(BaseModel):
    """What became of the composer's answer: kept (`valid`), `replaced` by code, or `skipped` (DEGRADED,
    or nothing confirmed: code wrote the answer)."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["valid", "replaced", "skipped"]
    detail: str | None = None
    answer: str | None = None
    discarded_answer: str | None = None
    offending_tokens: list[str] | None = None
    parse_status: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: Any) -> dict:
        # Each status has its own keys: one that does not apply is left out, not written as null.
        return {key: value for key, value in handler(self).items() if value is not None}


class EngineFallback(BaseModel):
    """The engine the session asked for was unavailable; `RoundRecord.engine` is the one that answered."""

    model_config = ConfigDict(extra="forbid")

    engine: str
    stage: str
    error_id: str


class RoundRecord(Verification):
    round: int
    traceability_version: str = TRACEABILITY_VERSION
    engine: str
    planner_output: PlannerOutput | None
    executor_output_parse_status: dict[str, Any]
    # What the verifier judged: the executor's claims after the scope guard (raw output is on its step).
    executor_structured_output: ExecutorOutput
    excluded_topics: list[str]
    # What the question asks and each ask's slot, as code read and verified it.
    asks: list[Ask] = []
    slots: list[Slot] = []
    # What the question named (services, alerts, topics) and what it named that the sources do not know.
    focus: dict[str, Any] = {}
    focus_notes: list[str] = []
    # The inventory the question was read against.
    inventory: dict[str, Any] = {}
    blocked_claims: list[Claim]
    # What the claim guards (restated conclusion, exclusion, focus, evidence as data) blocked or
    # removed, and why.
    guard_warnings: list[RuleMessage] = []
    # Each blocked claim's id and the guard that blocked it.
    blocked_by: dict[str, str] = {}
    gatekeeper_result: GatekeeperResult
    tool_trace_summary: list[dict]
    retry_context: dict | None
    route: Route | None
    # Set when the asked engine's backend failed and another engine answered.
    engine_fallback: EngineFallback | None = None
    # The earlier rounds, oldest first, each without its own `rounds` (this round is the record itself).
    rounds: list[RoundRecord] = []


class VerifierEvaluation(RoundRecord):
    composer_output: ComposerOutcome
    output_type: OutputType


def verifier_record_read(raw: Any) -> RoundRecord | None:
    """The stored record as a `VerifierEvaluation` (a finished session) or a `RoundRecord` (a round
    still retried); None when it is missing or unreadable, so nothing in it counts as verified."""
    if not isinstance(raw, dict) or not raw:
        return None
    model = VerifierEvaluation if "composer_output" in raw else RoundRecord
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None
