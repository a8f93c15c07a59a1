"""One diagnosis session, top to bottom (contracts §0):

    planner → executor (tool loop) → scope guard → gatekeeper → verifier → verdict (code)
      → route: PASS → NORMAL · LOW_CONFID ≥ threshold → disclaimer · LOW_CONFID < threshold → retry once
               · REJECT → DEGRADED
    → composer (allowed material only, guarded) → user-facing text (templates, code)

No database transaction is held across a model call: every write below is its own short statement
(or the merge service's short row-locked transaction). Any exception ends the session FAILED with
the reason recorded; the answer is only written when the session completes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from diagnosis.engines import engine_get
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.composer import (
    answer_from_material,
    composer_guard,
    composer_material_build,
    user_facing_text,
)
from diagnosis.pipeline.contracts import (
    ComposerInput,
    ExecutorInput,
    ExecutorOutput,
    PlannerInput,
    PlannerOutput,
    VerifierInput,
)
from diagnosis.pipeline.gatekeeper import GatekeeperResult, gatekeep
from diagnosis.pipeline.interfaces import Engine, ParseStatus, StageCall
from diagnosis.pipeline.routing import route
from diagnosis.pipeline.scope import excluded_topics_of, scope_guard
from diagnosis.pipeline.toolbox import RecordingToolbox, invocation_message
from diagnosis.pipeline.verifier import (
    Verification,
    verification_finalize,
    verifier_output_for_gatekeeper_reject,
)
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue, rule_evaluation_run
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import session_execute, session_update
from diagnosis.services.trace_summary import tool_trace_summary_build

logger = logging.getLogger(__name__)

TRACEABILITY_VERSION = "v1"
RETRY_INSTRUCTION = "仅补充以上断言相关证据，不要重复已完成检索"
Stage = AgentStep.Agent
StepStatus = AgentStep.Status


@dataclass
class RoundResult:
    round: int
    plan: PlannerOutput
    executor_output: ExecutorOutput
    gatekeeper_result: GatekeeperResult
    verification: Verification
    route: str
    evaluation: dict


def session_run(*, session_pk: int, evaluate_inline: bool = False) -> DiagnosisSession:
    """Run the pipeline; then the rule evaluation, in the background unless `evaluate_inline` (CLI, eval)."""
    session = session_execute(session_pk=session_pk, body=lambda s: _run(s, engine_get(s.engine)))
    if evaluate_inline:
        rule_evaluation_run(session_pk=session.pk)
        session.refresh_from_db()
    else:
        rule_evaluation_enqueue(session_pk=session.pk)
    return session


def _run(session: DiagnosisSession, engine: Engine) -> None:
    config = settings.DIAGNOSIS
    retry_context: dict | None = None
    rounds: list[RoundResult] = []
    for round_number in range(1, config["MAX_ROUNDS"] + 1):
        result = _run_round(session, engine, round_number, retry_context, rounds)
        rounds.append(result)
        if result.route != "RETRY":
            break
        retry_context = {
            "round": round_number,
            "missing_evidence_facts": list(result.verification.gaps),
            "instruction": RETRY_INSTRUCTION,
        }
    final = rounds[-1]
    output_type = final.route

    composer_answer, composer_output = "", {"status": "skipped", "detail": "DEGRADED 输出由代码模板生成"}
    if output_type != DiagnosisSession.OutputType.DEGRADED:
        composer_answer, composer_output = _compose(session, engine, final)
    answer = user_facing_text(
        output_type=output_type,
        composer_answer=composer_answer,
        verification=final.verification,
        gatekeeper_result=final.gatekeeper_result,
    )
    self_evaluation_merge(
        session_pk=session.pk,
        slot="verifier_evaluation",
        value=final.evaluation | {"composer_output": composer_output, "output_type": output_type},
    )
    session_update(
        session,
        status=DiagnosisSession.Status.COMPLETED,
        output_type=output_type,
        answer=answer,
        rounds=final.round,
        current_stage="done",
        finished_at=timezone.now(),
    )


def _run_round(
    session: DiagnosisSession,
    engine: Engine,
    round_number: int,
    retry_context: dict | None,
    earlier: list[RoundResult],
) -> RoundResult:
    config = settings.DIAGNOSIS

    plan_call = _stage(
        session,
        round_number,
        Stage.PLANNER,
        lambda: engine.plan(
            PlannerInput(query=session.query, round=round_number, retry_context=retry_context)
        ),
    )
    plan = plan_call.output

    toolbox = RecordingToolbox(session=session, round=round_number, max_calls=config["MAX_TOOL_CALLS"])
    # A retry round may cite (and must not repeat) what earlier rounds found.
    prior = session.tool_invocations.filter(round__lt=round_number) if earlier else []
    prior_messages = [invocation_message(invocation) for invocation in prior]
    executor_call = _stage(
        session,
        round_number,
        Stage.EXECUTOR,
        lambda: engine.execute(
            ExecutorInput(
                query=session.query,
                plan=plan,
                round=round_number,
                retry_context=retry_context,
                prior_tool_messages=prior_messages,
            ),
            toolbox,
        ),
    )

    excluded = excluded_topics_of(query=session.query, planned=plan.excluded_topics)
    scoped = scope_guard(executor_output=executor_call.output, excluded_topics=excluded)
    invocations = list(session.tool_invocations.all())
    started = time.perf_counter()
    session_update(session, current_stage=Stage.GATEKEEPER)
    gatekeeper_result = gatekeep(executor_output=scoped.kept_output, invocations=invocations)
    gatekeeper_result.warnings.extend(scoped.warnings)
    _record(
        session,
        round_number,
        Stage.GATEKEEPER,
        started,
        thought=_gatekeeper_thought(gatekeeper_result),
        model_output=gatekeeper_result.model_dump(),
        status=StepStatus.OK,
    )

    trace_summary = tool_trace_summary_build(invocations=invocations)
    if gatekeeper_result.severity == "reject":
        verifier_output = verifier_output_for_gatekeeper_reject(
            executor_output=scoped.kept_output, gatekeeper_result=gatekeeper_result
        )
        _record(
            session,
            round_number,
            Stage.VERIFIER,
            time.perf_counter(),
            status=StepStatus.SKIPPED,
            thought="引用核验判定为伪造证据（reject），未调用校验模型",
            model_output=verifier_output.model_dump(),
        )
    else:
        verifier_output = _stage(
            session,
            round_number,
            Stage.VERIFIER,
            lambda: engine.verify(
                VerifierInput(
                    original_query=session.query,
                    executor_structured_output=scoped.kept_output.model_dump(),
                    gatekeeper_result=gatekeeper_result.model_dump(),
                    tool_trace_summary=trace_summary,
                    executor_output_parse_status=executor_call.parse_status.as_dict(),
                    retry_context=retry_context,
                )
            ),
        ).output

    verification = verification_finalize(
        verifier_output=verifier_output,
        executor_output=scoped.kept_output,
        gatekeeper_result=gatekeeper_result,
    )
    next_step = route(
        verdict=verification.verdict,
        score=verification.groundedness_score,
        round=round_number,
        max_rounds=config["MAX_ROUNDS"],
        threshold=config["LOW_CONFIDENCE_THRESHOLD"],
    )
    evaluation = {
        **verification.model_dump(),
        "round": round_number,
        "traceability_version": TRACEABILITY_VERSION,
        "engine": engine.name,
        "planner_output": plan.model_dump(),
        "executor_output_parse_status": executor_call.parse_status.as_dict(),
        # What the verifier judged: the executor's claims after the scope guard (raw output is on its step).
        "executor_structured_output": scoped.kept_output.model_dump(),
        "excluded_topics": excluded,
        "blocked_claims": [claim.model_dump() for claim in scoped.blocked_claims],
        "gatekeeper_result": gatekeeper_result.model_dump(),
        "tool_trace_summary": trace_summary,
        "retry_context": retry_context,
        "route": next_step,
    }
    evaluation["rounds"] = [*(r.evaluation | {"rounds": []} for r in earlier), evaluation | {"rounds": []}]
    if next_step == "RETRY":  # a final round's record is written once, with the composer's outcome
        self_evaluation_merge(session_pk=session.pk, slot="verifier_evaluation", value=evaluation)
    return RoundResult(
        round_number, plan, scoped.kept_output, gatekeeper_result, verification, next_step, evaluation
    )


def _compose(session: DiagnosisSession, engine: Engine, final: RoundResult) -> tuple[str, dict]:
    material: ComposerInput = composer_material_build(
        query=session.query,
        executor_output=final.executor_output,
        verification=final.verification,
        gatekeeper_result=final.gatekeeper_result,
    )
    call = _stage(session, final.round, Stage.COMPOSER, lambda: engine.compose(material))
    answer = call.output.answer.strip()
    offending = composer_guard(
        answer=answer, material=material, excluded_topics=final.evaluation["excluded_topics"]
    )
    if answer and not offending:
        return answer, {"status": "valid", "answer": answer, "offending_tokens": []}
    replacement = answer_from_material(material)
    detail = "撰写结果为空" if not answer else "撰写结果包含材料之外的事实：" + "、".join(offending)
    return replacement, {
        "status": "replaced",
        "detail": detail,
        "discarded_answer": answer,
        "answer": replacement,
        "offending_tokens": offending,
        "parse_status": call.parse_status.as_dict(),
    }


def _stage(
    session: DiagnosisSession, round_number: int, agent: str, run: Callable[[], StageCall]
) -> StageCall:
    """Run one engine stage and record it as an AgentStep (also on failure, then re-raise)."""
    session_update(session, current_stage=agent, rounds=round_number)
    started = time.perf_counter()
    try:
        call = run()
    except Exception as exc:
        # An endpoint's own error text (paths, stack traces) is for staff: kept on the step only.
        staff_detail = getattr(exc, "staff_detail", None)
        _record(
            session,
            round_number,
            agent,
            started,
            status=StepStatus.FAILED,
            thought=f"{type(exc).__name__}: {exc}",
            model_output={"error_id": getattr(exc, "error_id", ""), "server_error": staff_detail}
            if staff_detail
            else None,
        )
        raise
    status = StepStatus.FALLBACK if call.parse_status.status == "parse_failed" else StepStatus.OK
    _record(
        session,
        round_number,
        agent,
        started,
        status=status,
        thought=call.thought,
        call=call,
        model_output=call.model_output if call.model_output is not None else call.output.model_dump(),
    )
    return call


def _record(
    session: DiagnosisSession,
    round_number: int,
    agent: str,
    started: float,
    *,
    status: str,
    thought: str = "",
    model_output: Any = None,
    call: StageCall | None = None,
) -> None:
    usage = call.usage if call else None
    AgentStep.objects.create(
        session=session,
        round=round_number,
        agent=agent,
        status=status,
        thought=thought[:2000],
        model_output=_json_safe(model_output, call.parse_status if call else None),
        latency_ms=int((time.perf_counter() - started) * 1000),
        llm_wait_ms=int(usage.wait_ms) if usage else 0,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        llm_calls=usage.llm_calls if usage else 0,
        prompt_version=call.prompt_version if call else "code-v1",
    )


def _json_safe(model_output: Any, parse_status: ParseStatus | None) -> dict:
    snapshot = model_output if isinstance(model_output, dict) else {"raw": model_output}
    if parse_status is not None:
        snapshot = snapshot | {"parse_status": parse_status.as_dict()}
    return snapshot


def _gatekeeper_thought(result: GatekeeperResult) -> str:
    rules = "、".join(result.failed_rules) or "无"
    return f"引用核验 {result.status}（{result.severity}）；失败规则：{rules}"
