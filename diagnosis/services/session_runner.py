"""Running one diagnosis session: the Django adapter of the pipeline.

It claims the session, hands the Django-free orchestrator an engine and a `SessionRecorder` (steps
become `AgentStep` rows, tool calls `ToolInvocation` rows, round records go into `self_evaluation`),
and writes the result. No database transaction is held across a model call: every write is its own
short statement (or the merge service's short row-locked transaction). Any exception ends the
session FAILED with the reason recorded; the answer is only written when the session completes.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.utils import timezone

from diagnosis.engines import engine_get
from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import RecordedInvocation
from diagnosis.pipeline.interfaces import Stage, StepRecord
from diagnosis.pipeline.orchestrator import diagnose
from diagnosis.pipeline.records import RoundRecord
from diagnosis.pipeline.round import RoundLimits
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue, rule_evaluation_run
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import session_execute, session_update
from diagnosis.services.toolbox import RecordingToolbox, invocation_message
from diagnosis.services.trace_summary import tool_trace_summary_build
from diagnosis.world import world_current
from tools.base import guidance_tool_names

THOUGHT_CHARS = 2000


def session_run(*, session_pk: int, evaluate_inline: bool = False) -> DiagnosisSession:
    """Run the pipeline; then the rule evaluation, in the background unless `evaluate_inline` (CLI, eval)."""
    session = session_execute(session_pk=session_pk, body=_diagnose)
    if evaluate_inline:
        rule_evaluation_run(session_pk=session.pk)
        session.refresh_from_db()
    else:
        rule_evaluation_enqueue(session_pk=session.pk)
    return session


def _diagnose(session: DiagnosisSession) -> None:
    config = settings.DIAGNOSIS
    result = diagnose(
        query=session.query,
        engine=engine_get(session.engine),
        recorder=SessionRecorder(session),
        limits=RoundLimits(
            max_rounds=config["MAX_ROUNDS"],
            max_tool_calls=config["MAX_TOOL_CALLS"],
            low_confidence_threshold=config["LOW_CONFIDENCE_THRESHOLD"],
        ),
        # The sources' inventory is asked once per session, before any round (contracts §12).
        world=world_current(),
    )
    self_evaluation_merge(
        session_pk=session.pk, slot=VERIFIER_EVALUATION, value=result.evaluation.model_dump(mode="json")
    )
    session_update(
        session,
        status=DiagnosisSession.Status.COMPLETED,
        output_type=result.output_type.value,
        answer=result.answer,
        rounds=result.rounds,
        current_stage="done",
        finished_at=timezone.now(),
    )


class SessionRecorder:
    """The pipeline's `Recorder` for one stored session."""

    def __init__(self, session: DiagnosisSession) -> None:
        self.session = session
        self.guidance_tools = guidance_tool_names()

    def stage_started(self, *, stage: Stage, round: int) -> None:
        session_update(self.session, current_stage=stage.value, rounds=round)

    def step_recorded(self, step: StepRecord) -> None:
        usage = step.usage
        AgentStep.objects.create(
            session=self.session,
            round=step.round,
            agent=step.stage.value,
            status=step.status.value,
            thought=step.thought[:THOUGHT_CHARS],
            model_output=step.model_output,
            latency_ms=step.latency_ms,
            llm_wait_ms=int(usage.wait_ms) if usage else 0,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            llm_calls=usage.llm_calls if usage else 0,
            prompt_version=step.prompt_version,
        )

    def toolbox(self, *, round: int, max_calls: int) -> RecordingToolbox:
        return RecordingToolbox(session=self.session, round=round, max_calls=max_calls)

    def tool_messages_before(self, *, round: int) -> list[dict]:
        return [invocation_message(i) for i in self.session.tool_invocations.filter(round__lt=round)]

    def invocations(self) -> list[ToolInvocation]:
        return list(self.session.tool_invocations.all())

    def tool_trace_summary(self, invocations: Sequence[RecordedInvocation]) -> list[dict]:
        return tool_trace_summary_build(invocations=invocations)

    def round_recorded(self, record: RoundRecord) -> None:
        self_evaluation_merge(
            session_pk=self.session.pk, slot=VERIFIER_EVALUATION, value=record.model_dump(mode="json")
        )
