"""Running one diagnosis session: the Django adapter of the pipeline.

It claims the session, hands the Django-free orchestrator an engine and a `SessionRecorder` (steps
become `AgentStep` rows, tool calls `ToolInvocation` rows, round records go into `self_evaluation`),
and writes the result. A session costs a few short commits, none held across a model or source call:
the claim, one per executor turn (its tool calls, whose ids claims cite), one per retried round (its
steps and record) and the end (the last steps, the record and the answer). Stages are progress in
memory, written by the heartbeat (`SessionProgress`). An engine whose model is unavailable is replaced by
its fallback engine; any exception still raised ends the session FAILED with the
reason recorded and the steps so far kept; the answer is only written when the session completes.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from diagnosis import tracing
from diagnosis.engines import engine_fallback_get, engine_get
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.interfaces import Stage, StepRecord
from diagnosis.pipeline.orchestrator import diagnose
from diagnosis.pipeline.records import RoundRecord
from diagnosis.pipeline.round import RoundLimits
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION
from diagnosis.selectors.world import world_current
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue, rule_evaluation_run
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import session_execute, session_update
from diagnosis.services.session_liveness import SessionProgress
from diagnosis.services.tool_call_summary import tool_trace_summary_build
from diagnosis.services.toolbox import CallsKept, RecordingToolbox
from tools.evidence.result import ToolResult
from tools.evidence.tool import guidance_tool_names

THOUGHT_CHARS = 2000


def session_run(*, session_pk: int, evaluate_inline: bool = False) -> DiagnosisSession:
    """Run the pipeline; then the rule evaluation, in the background unless `evaluate_inline` (CLI, eval)."""
    progress = SessionProgress()
    session = session_execute(
        session_pk=session_pk, body=lambda session: _diagnose(session, progress), progress=progress
    )
    if evaluate_inline:
        rule_evaluation_run(session_pk=session.pk)
        session.refresh_from_db()
    else:
        rule_evaluation_enqueue(session_pk=session.pk)
    return session


def _diagnose(session: DiagnosisSession, progress: SessionProgress) -> None:
    config = settings.DIAGNOSIS
    recorder = SessionRecorder(session, progress=progress)
    try:
        with tracing.stages_traced(recorder) as traced_recorder:
            result = diagnose(
                query=session.query,
                engine=engine_get(session.engine),
                fallback=engine_fallback_get(session.engine),
                recorder=traced_recorder,
                limits=RoundLimits(
                    max_rounds=config["MAX_ROUNDS"],
                    max_tool_calls=config["MAX_TOOL_CALLS"],
                    low_confidence_threshold=config["LOW_CONFIDENCE_THRESHOLD"],
                ),
                # The sources' inventory is asked once per session, before any round.
                world=world_current(),
            )
    except BaseException:
        recorder.steps_write()  # the failed stage's step shows reviewers where it stopped
        raise
    with transaction.atomic():
        recorder.steps_write()
        self_evaluation_merge(
            session_pk=session.pk, slot=VERIFIER_EVALUATION, value=result.evaluation.model_dump(mode="json")
        )
        session_update(
            session,
            status=DiagnosisSession.Status.COMPLETED,
            output_type=result.output_type.value,
            answer=result.answer,
            answer_record=result.record.model_dump(mode="json"),
            rounds=result.rounds,
            current_stage="done",
            finished_at=timezone.now(),
        )


class SessionRecorder:
    """The pipeline's `Recorder` for one stored session."""

    def __init__(self, session: DiagnosisSession, *, progress: SessionProgress) -> None:
        self.session = session
        self.progress = progress
        self.guidance_tools = guidance_tool_names()
        self.pending_steps: list[AgentStep] = []
        # The session's calls as its toolboxes record them: no round reads them back.
        self.calls = CallsKept()

    def stage_started(self, *, stage: Stage, round: int) -> None:
        self.progress.stage, self.progress.round = stage.value, round

    def step_recorded(self, step: StepRecord) -> None:
        self.pending_steps.append(_step_row(self.session, step))

    def steps_write(self) -> None:
        """The steps kept since the last write, in one INSERT."""
        steps, self.pending_steps = self.pending_steps, []
        AgentStep.objects.bulk_create(steps)

    def toolbox(self, *, round: int, max_calls: int, at: datetime | None = None) -> RecordingToolbox:
        return RecordingToolbox(
            session=self.session,
            round=round,
            max_calls=max_calls,
            concurrency=settings.DIAGNOSIS["TOOL_CONCURRENCY"],
            kept=self.calls,
            at=at,
        )

    def tool_results_before(self, *, round: int) -> list[ToolResult]:
        return self.calls.results_before(round=round)

    def invocations(self) -> list[ToolResult]:
        return self.calls.results()

    def tool_trace_summary(self) -> list[dict]:
        return tool_trace_summary_build(invocations=self.calls.invocations())

    def round_recorded(self, record: RoundRecord) -> None:
        with transaction.atomic():
            self.steps_write()
            self_evaluation_merge(
                session_pk=self.session.pk, slot=VERIFIER_EVALUATION, value=record.model_dump(mode="json")
            )


def _step_row(session: DiagnosisSession, step: StepRecord) -> AgentStep:
    usage = step.usage
    return AgentStep(
        session=session,
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
