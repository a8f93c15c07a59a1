"""The stage contracts: what each stage receives and what it must return.

Nearly a leaf: it imports only the question's focus and asks (`diagnosis.pipeline.focus`, `.ask`:
plain data over the world vocabulary), so engines, guards and the Django side can all depend on it without a cycle. The output models are also the JSON schemas sent as `response_format`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.focus import QuestionFocus
from tools.evidence.registry import PLANNABLE_TOOLS, current_name

# The no-hit path is the tool result's; read here too by the readers of claims and citations.
from tools.evidence.result import NO_EVIDENCE_PATH as NO_EVIDENCE_PATH
from tools.evidence.result import Ref, ToolResult
from tools.promql import Carrier

ANSWER_VERSION = "executor_evidence_v2"
# raw_path of one record of a tool's output: `$.alerts[0]`, `$.series[2]`, `$.logs[3]`.
RECORD_PATH = re.compile(r"\$\.(?P<key>[A-Za-z_]+)\[(?P<index>\d+)\]")

ClaimType = Literal["observation", "negative_observation", "root_cause", "risk"]
ClaimVerification = Literal[
    "direct_observation",
    "reasonable_inference",
    "overstated",
    "unsupported",
    "external_unknown",
    "contradicted",
]
FactVerification = Literal["direct_evidence", "indirect_support", "no_evidence", "contradicted"]
Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
PlannedTool = Literal[PLANNABLE_TOOLS]


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: PlannedTool
    purpose: str

    @field_validator("tool", mode="before")
    @classmethod
    def _current_name(cls, tool: object) -> object:
        """A step naming a tool by a former name (a recorded or scripted plan) names it as it is now."""
        return current_name(tool) if isinstance(tool, str) else tool


class PlannerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str
    steps: list[PlanStep]
    narrow_scope: bool = Field(description="the user asked to only confirm / only look at one thing")
    focus: list[str] = Field(description="services and alert names the question is about")
    excluded_topics: list[str] = Field(description="what the user said not to analyse")


class EvidenceBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool_name: str
    # Optional so a missing id can be seen (and auto-backfilled) instead of failing the parse.
    source_invocation_id: int | None
    raw_path: str | None
    evidence_excerpt: str

    @classmethod
    def of_ref(cls, result: ToolResult, ref: Ref) -> EvidenceBinding:
        """The binding that cites one evidence ref of a recorded tool result."""
        return cls(
            tool_name=result.tool_name,
            source_invocation_id=result.invocation_id,
            raw_path=ref.path,
            evidence_excerpt=ref.text,
        )


class RankedCandidate(BaseModel):
    """A root-cause candidate (or a change) as code ranked and said it (§23), with the refs its
    numbers come from: what the llm engine is given to explain, and what a model's root cause must be."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str
    mechanism: str
    # The time of day it began (`HH:MM`), and its level before → after, as the conclusion says them.
    onset: str
    before: str
    after: str
    bindings: list[EvidenceBinding]


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


class ComposerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str


@dataclass
class PlannerInput:
    query: str
    round: int
    retry_context: dict | None = None
    # What the question names and asks, read by code against the sources' inventory.
    focus: QuestionFocus = field(default_factory=QuestionFocus)
    # What the question asks, each with the slot its answer must fill.
    asks: list[Ask] = field(default_factory=list)
    # Its scope as code read it: a narrow confirmation, and the topics the user excluded.
    narrow_scope: bool = False
    excluded_topics: list[str] = field(default_factory=list)


@dataclass
class ExecutorInput:
    query: str
    plan: PlannerOutput
    round: int
    retry_context: dict | None = None
    # The results of the calls already made (earlier rounds', the asks'), citable again.
    prior_results: list[ToolResult] = field(default_factory=list)
    focus: QuestionFocus = field(default_factory=QuestionFocus)
    # Which label of a metric's series carries a subject (a topic query's matcher goes on it).
    carrier: Carrier | None = None
    # The `结论` lines code read from the calls already made (the asks' slots they fill, verified); a
    # slot of ranked candidates is given by its `candidates` instead.
    conclusions: list[str] = field(default_factory=list)
    # The asks those calls leave open (a slot unfilled, or a cause to reason about), by label.
    open_asks: list[str] = field(default_factory=list)
    # The series an investigation's candidates rest on (verified): findings to state, with their refs.
    inference_refs: list[EvidenceBinding] = field(default_factory=list)
    # The investigation's ranked candidates (verified), and the calls they were computed from (every
    # range series read): a model is given the candidates instead of those calls' results.
    candidates: list[RankedCandidate] = field(default_factory=list)
    computed_from: list[int] = field(default_factory=list)
    # Every ask's slot filled and what is open is only the reasoning over the candidates: a model has
    # nothing to find, only them to explain.
    only_candidates_open: bool = False


@dataclass(frozen=True)
class VerifiedExcerpt:
    """Evidence text the gatekeeper found where a claim's binding points, and where it is."""

    source: str  # `query_logs #12 $.logs[0]`
    text: str


@dataclass(frozen=True)
class ClaimUnderCheck:
    """One claim as a verifier judges it: nothing but the claim, its verified excerpts and what code
    already found (its fact tokens in or not in those excerpts, and whether its polarity agrees)."""

    claim_id: str
    claim_type: str
    claim: str
    excerpts: list[VerifiedExcerpt]
    facts_in_excerpts: list[str]
    facts_not_in_excerpts: list[str]
    polarity: str  # `consistent`, or how the claim's negation differs from its evidence's


@dataclass
class VerifierInput:
    """Assembled explicitly: never the planner's or executor's intermediate reasoning."""

    original_query: str
    executor_structured_output: dict
    gatekeeper_result: dict
    tool_trace_summary: list[dict]
    executor_output_parse_status: dict
    # The same claims one by one, with code's checks: all a model verifier is shown.
    claims: list[ClaimUnderCheck]
    retry_context: dict | None = None


@dataclass
class ComposerInput:
    """Only verifier-allowed material: never a blocked claim or raw tool output."""

    query: str
    confirmed_findings: list[dict]
    reasonable_inferences: list[dict]
    gaps: list[str]
    allowed_actions: list[str]
    # One `结论` line per filled slot, written by code from verified evidence; the answer opens with them.
    conclusions: list[str] = field(default_factory=list)


def record_path(key: str, index: int) -> str:
    """The raw_path of the record at `index` of a tool output's `key` collection."""
    return f"$.{key}[{index}]"


def record_path_parts(raw_path: str | None) -> tuple[str, int] | None:
    """(collection key, index) of a record's raw_path; None for any other path."""
    match = RECORD_PATH.fullmatch(raw_path or "")
    return (match["key"], int(match["index"])) if match else None


def record_at(output: Any, raw_path: str | None) -> dict | None:
    """The record of a tool's output a raw_path points at; None when it points at no record."""
    parts = record_path_parts(raw_path)
    if parts is None or not isinstance(output, dict):
        return None
    key, index = parts
    records = output.get(key)
    if isinstance(records, list) and index < len(records) and isinstance(records[index], dict):
        return records[index]
    return None
