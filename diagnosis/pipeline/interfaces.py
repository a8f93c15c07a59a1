"""The interfaces a round runs over: the engine (both engines implement it) and the toolbox.

The guards never know which engine ran.

Each stage method returns a `StageCall`: the validated stage output plus what the orchestrator
records on the `AgentStep` (thought, model output snapshot, prompt version, usage, parse status).
Engines never touch the database except through the `Toolbox` handed to `execute`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

T = TypeVar("T")


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


class Toolbox(Protocol):
    """Records every call as a `ToolInvocation`; bounded by DIAGNOSIS_MAX_TOOL_CALLS per round."""

    remaining_calls: int
    # Whether `call` may run on several threads at once (each thread then closes its own resources).
    parallel_safe: bool

    def call(self, tool_name: str, arguments: dict) -> dict:
        """Run and record one tool call; return the tool message the model sees (contracts §4)."""
        ...

    def tool_definitions(self) -> list[dict]:
        """OpenAI function-tool definitions of the model-facing tools."""
        ...


class Engine(Protocol):
    name: str

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]: ...

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]: ...

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]: ...

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]: ...
