"""The small interfaces a round runs over: the engine, the toolbox and the recorder.

- `Engine`: both engines implement it; the guards never know which engine ran. Each stage method
  returns a `StageCall`: the validated stage output plus what is recorded about the step (thought,
  model output snapshot, prompt version, usage, parse status).
- `Toolbox`: the engine's only access to tools (and so to the outside world) during `execute`.
- `Recorder`: where the pipeline writes what happened and reads what the tools recorded. The Django
  adapter (`diagnosis.services.session_runner`) implements it; the pipeline never sees a database.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from diagnosis.pipeline.contracts import (
    ComposerInput,
    ComposerOutput,
    ExecutorInput,
    ExecutorOutput,
    PlannerInput,
    PlannerOutput,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.records import RoundRecord
from tools.evidence.registry import current_name
from tools.evidence.result import ToolResult

T = TypeVar("T")


class EngineUnavailableError(RuntimeError):
    """An engine's backend (a model endpoint) failed after its retries, or its budget is spent.

    Its message is fit for users and carries `error_id`; `staff_detail` is the backend's own text.
    Not a failed diagnosis: the orchestrator answers with the fallback engine."""

    stage: str
    error_id: str
    staff_detail: str


class Stage(StrEnum):
    PLANNER = "planner"
    EXECUTOR = "executor"
    GATEKEEPER = "gatekeeper"
    VERIFIER = "verifier"
    COMPOSER = "composer"


class StepStatus(StrEnum):
    OK = "ok"
    FALLBACK = "fallback"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    # Wall time spent waiting for the model (SDK call duration), so benchmarks can report our own overhead.
    wait_ms: float = 0.0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.llm_calls += other.llm_calls
        self.wait_ms += other.wait_ms


@dataclass
class ParseStatus:
    """`valid`, `repaired` (valid after the one re-ask) or `parse_failed`."""

    status: str = "valid"
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "detail": self.detail}


@dataclass
class StageCall(Generic[T]):
    output: T
    thought: str = ""
    model_output: Any = None
    prompt_version: str = ""
    usage: Usage = field(default_factory=Usage)
    parse_status: ParseStatus = field(default_factory=ParseStatus)


@dataclass
class StepRecord:
    """One stage of one round as it is recorded (an `AgentStep` row on the Django side)."""

    round: int
    stage: Stage
    status: StepStatus
    latency_ms: int
    thought: str = ""
    model_output: dict = field(default_factory=dict)
    usage: Usage | None = None
    prompt_version: str = "code-v1"


def call_key(tool_name: str, arguments: dict) -> str:
    """What identifies a tool call: its tool and its arguments, whatever their order (a JSON object
    never starts the way a tool name does, so two calls share a key only when they are the same).
    The tool by its name now: a call by a former name is the same call."""
    return current_name(tool_name) + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


class Toolbox(Protocol):
    """Records every call; bounded by DIAGNOSIS_MAX_TOOL_CALLS per round."""

    remaining_calls: int
    # Whether `call` may run on several threads at once (each thread then closes its own resources).
    parallel_safe: bool

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        """Run and record one tool call; return its result."""
        ...

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[ToolResult]:
        """Run one turn's independent calls and record them together; their results, in order."""
        ...

    def tool_definitions(self) -> list[dict]:
        """OpenAI function-tool definitions of the model-facing tools."""
        ...


class ToolboxWrapper:
    """A toolbox over another one: what a wrapper does not change passes through. Wrappers override
    `call_many` (every call goes through it) and, where they change it, `tool_definitions`."""

    def __init__(self, toolbox: Toolbox) -> None:
        self._toolbox = toolbox

    @property
    def remaining_calls(self) -> int:
        return self._toolbox.remaining_calls

    @property
    def parallel_safe(self) -> bool:
        return self._toolbox.parallel_safe

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[ToolResult]:
        return self._toolbox.call_many(calls)

    def tool_definitions(self) -> list[dict]:
        return self._toolbox.tool_definitions()


class Engine(Protocol):
    name: str

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]: ...

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]: ...

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]: ...

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]: ...


class Recorder(Protocol):
    """The session's record, as the pipeline sees it."""

    guidance_tools: Collection[str]

    def stage_started(self, *, stage: Stage, round: int) -> None:
        """The session is now in this stage (the live view shows it; the adapter may write it later)."""
        ...

    def step_recorded(self, step: StepRecord) -> None:
        """A stage's step; the adapter may keep it until the round's record is written."""
        ...

    def toolbox(self, *, round: int, max_calls: int, at: datetime | None = None) -> Toolbox:
        """A toolbox that records this round's calls, each asking its source about `at` (None: now)."""
        ...

    def tool_results_before(self, *, round: int) -> list[ToolResult]:
        """The results of the calls of earlier rounds, citable again: those the toolboxes returned,
        kept, so a round asking again costs no read."""
        ...

    def invocations(self) -> Sequence[ToolResult]:
        """The result of every tool call this session recorded so far: the only evidence a claim may
        cite. Kept as the toolboxes returned them, never read back."""
        ...

    def tool_trace_summary(self) -> list[dict]:
        """The bounded overview of the session's evidence calls so far (for the verifier)."""
        ...

    def round_recorded(self, record: RoundRecord) -> None:
        """A round that is retried: its record is kept at once, before the next round runs."""
        ...
