"""A round run without Django: a scripted engine and an in-memory recorder over given invocations."""

from __future__ import annotations

from dataclasses import dataclass, field

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
from diagnosis.pipeline.focus import Inventory, World
from diagnosis.pipeline.interfaces import Stage, StageCall, StepRecord, Toolbox
from diagnosis.pipeline.question import question_read
from diagnosis.pipeline.round import RoundLimits, RoundResult, round_run
from tools.evidence.result import ToolResult
from tools.evidence.tool import guidance_tool_names
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

DEMO_VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
# The demo world's vocabulary, and an inventory of what it names (no source asked).
DEMO_WORLD = World(
    vocabulary=DEMO_VOCABULARY,
    inventory=Inventory.build(services=(), alerts=(), vocabulary=DEMO_VOCABULARY),
    service_labels=("service", "app", "job"),
)

ONE_ROUND = RoundLimits(max_rounds=1, max_tool_calls=8, low_confidence_threshold=0.6)


@dataclass
class ScriptedEngine:
    """Answers every stage with the given outputs; its executor calls no tool."""

    executor_output: ExecutorOutput
    verifier_output: VerifierOutput
    name: str = "scripted"
    composer_answer: str = ""
    verified: list[VerifierInput] = field(default_factory=list)

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]:
        plan = PlannerOutput(
            goal=stage_input.query, steps=[], narrow_scope=False, focus=[], excluded_topics=[]
        )
        return StageCall(output=plan)

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]:
        return StageCall(output=self.executor_output)

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        self.verified.append(stage_input)
        return StageCall(output=self.verifier_output)

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]:
        return StageCall(output=ComposerOutput(answer=self.composer_answer))


class NoTools:
    remaining_calls = 0

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        raise AssertionError("a scripted engine calls no tool")

    def call_many(self, calls) -> list[ToolResult]:
        raise AssertionError("a scripted engine calls no tool")

    def tool_definitions(self) -> list[dict]:
        return []


@dataclass
class MemoryRecorder:
    """The pipeline's recorder over invocations recorded beforehand; steps are kept in a list."""

    # Recorded calls (`ToolInvocation` rows or the tests' `Invocation`s), read as the pipeline reads them.
    recorded: list
    steps: list[StepRecord] = field(default_factory=list)
    stages: list[Stage] = field(default_factory=list)
    guidance_tools: frozenset[str] = field(default_factory=guidance_tool_names)

    def stage_started(self, *, stage: Stage, round: int) -> None:
        self.stages.append(stage)

    def step_recorded(self, step: StepRecord) -> None:
        self.steps.append(step)

    def toolbox(self, *, round: int, max_calls: int) -> Toolbox:
        return NoTools()

    def tool_results_before(self, *, round: int) -> list[ToolResult]:
        """The recorded calls' results (all of them count as this round's)."""
        return self.invocations() if round > 1 else []

    def invocations(self) -> list[ToolResult]:
        return [call.tool_result() for call in self.recorded]

    def tool_trace_summary(self) -> list[dict]:
        return []

    def round_recorded(self, record: dict) -> None:
        raise AssertionError("one round only")


def one_round(
    *, executor_output: ExecutorOutput, verifier_output: VerifierOutput, invocations: list
) -> RoundResult:
    """The first round of a question, as the orchestrator runs it, over these recorded invocations."""
    return round_run(
        question=question_read(query="查看 order-service 的异常", world=DEMO_WORLD),
        round_number=1,
        retry_context=None,
        earlier=[],
        engine=ScriptedEngine(executor_output=executor_output, verifier_output=verifier_output),
        recorder=MemoryRecorder(recorded=invocations),
        limits=ONE_ROUND,
        world=DEMO_WORLD,
    )
