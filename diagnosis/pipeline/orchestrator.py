"""One diagnosis, top to bottom:

    round: planner → executor (tool loop) → scope and focus guards → gatekeeper → verifier → verdict (code)
      → route: PASS → NORMAL · LOW_CONFID ≥ threshold → disclaimer · LOW_CONFID < threshold → retry once
               · REJECT → DEGRADED
    → composer (allowed material only, guarded) → user-facing text (templates, code)
      → what the question named that is unknown, or that nothing was understood

An engine whose backend is unavailable (a model endpoint down, its budget spent) does not fail the
diagnosis: the fallback engine answers from the calls already made, and the answer's
first line says so.

The result comes back as a value; what happened on the way is written through the `Recorder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from diagnosis.pipeline.answer import AnswerRecord, answer_markdown
from diagnosis.pipeline.composer import (
    answer_conclusions,
    answer_from_material,
    composer_guard,
    composer_material_build,
    degraded_of,
    states_confirmed_finding,
    verified_statements,
)
from diagnosis.pipeline.focus import World
from diagnosis.pipeline.interfaces import (
    Engine,
    EngineUnavailableError,
    Recorder,
    Stage,
    StepRecord,
    StepStatus,
)
from diagnosis.pipeline.question import Question, question_read
from diagnosis.pipeline.records import ComposerOutcome, EngineFallback, VerifierEvaluation
from diagnosis.pipeline.round import RoundLimits, RoundResult, round_run, stage_run
from diagnosis.pipeline.routing import RETRY, OutputType
from tools.evidence.result import ToolResult

NOTHING_TO_COMPOSE = "没有已确认的发现或合理推断：答案由代码按证据缺口生成，未调用撰写模型"
RETRY_INSTRUCTION = "仅补充以上断言相关证据，不要重复已完成检索"
FALLBACK_NOTICE = "{outage}；本次由{engine}根据已获取的证据作答。"
ENGINE_LABELS = {"rules": "规则引擎"}


@dataclass(frozen=True)
class Diagnosis:
    output_type: OutputType
    # The answer as structure, and its Markdown (what `answer` stores).
    record: AnswerRecord
    rounds: int
    # The final round's `verifier_evaluation` record, with the composer's outcome.
    evaluation: VerifierEvaluation

    @property
    def answer(self) -> str:
        return answer_markdown(self.record)


def diagnose(
    *,
    query: str,
    engine: Engine,
    recorder: Recorder,
    limits: RoundLimits,
    world: World,
    fallback: Engine | None = None,
) -> Diagnosis:
    """The diagnosis by `engine`; by `fallback` when `engine` is unavailable (then its error goes up
    only if `fallback` fails too). The question is read once, here, for every round of either engine."""
    question = question_read(query=query, world=world)
    try:
        return _diagnosed(question, engine, recorder, limits, world, reused=[])
    except EngineUnavailableError as outage:
        if fallback is None:
            raise
        # Every call made so far is evidence the fallback starts from, not a search to repeat.
        gathered = recorder.tool_results_before(round=limits.max_rounds + 1)
        diagnosis = _diagnosed(question, fallback, recorder, limits, world, reused=gathered)
        return _answered_instead(diagnosis, outage=outage, engine=engine.name, fallback=fallback.name)


def _answered_instead(
    diagnosis: Diagnosis, *, outage: EngineUnavailableError, engine: str, fallback: str
) -> Diagnosis:
    label = ENGINE_LABELS.get(fallback, f"{fallback} 引擎")
    return Diagnosis(
        output_type=diagnosis.output_type,
        record=diagnosis.record.model_copy(
            update={"fallback_notice": FALLBACK_NOTICE.format(outage=outage, engine=label)}
        ),
        rounds=diagnosis.rounds,
        evaluation=diagnosis.evaluation.model_copy(
            update={
                "engine_fallback": EngineFallback(engine=engine, stage=outage.stage, error_id=outage.error_id)
            }
        ),
    )


def _diagnosed(
    question: Question,
    engine: Engine,
    recorder: Recorder,
    limits: RoundLimits,
    world: World,
    *,
    reused: Sequence[ToolResult],
) -> Diagnosis:
    retry_context: dict | None = None
    rounds: list[RoundResult] = []
    for round_number in range(1, limits.max_rounds + 1):
        result = round_run(
            question=question,
            round_number=round_number,
            retry_context=retry_context,
            earlier=rounds,
            engine=engine,
            recorder=recorder,
            limits=limits,
            world=world,
            reused=reused,
        )
        rounds.append(result)
        if result.route != RETRY:
            break
        recorder.round_recorded(result.record)
        retry_context = {
            "round": round_number,
            "missing_evidence_facts": list(result.verification.gaps),
            "instruction": RETRY_INSTRUCTION,
        }
    final = rounds[-1]
    output_type = OutputType(final.route)

    record = AnswerRecord(
        output_type=output_type,
        gaps=list(final.verification.gaps),
        focus_notes=list(final.record.focus_notes),
    )
    composer_output = ComposerOutcome(status="skipped", detail="DEGRADED 输出由代码模板生成")
    if output_type == OutputType.DEGRADED:
        record.degraded = degraded_of(
            verification=final.verification, gatekeeper_result=final.gatekeeper_result
        )
    else:
        record, composer_output = _compose(question.text, engine, recorder, final, world, record)
    return Diagnosis(
        output_type=output_type,
        record=record,
        rounds=final.round,
        evaluation=VerifierEvaluation(
            **dict(final.record), composer_output=composer_output, output_type=output_type
        ),
    )


def _compose(
    query: str, engine: Engine, recorder: Recorder, final: RoundResult, world: World, record: AnswerRecord
) -> tuple[AnswerRecord, ComposerOutcome]:
    """The record with the composer's part: the material's findings and inferences, its conclusions and
    actions, and the model's prose when it passed `composer_guard` (else code writes that part)."""
    findings, inferences = verified_statements(
        executor_output=final.executor_output,
        verification=final.verification,
        gatekeeper_result=final.gatekeeper_result,
        names=world.fact_names,
    )
    conclusions = answer_conclusions(final.record.slots)
    material = composer_material_build(
        query=query,
        executor_output=final.executor_output,
        verification=final.verification,
        gatekeeper_result=final.gatekeeper_result,
        vocabulary=world.vocabulary,
        names=world.fact_names,
        conclusions=[conclusion.line() for conclusion in conclusions],
    )
    record = record.model_copy(
        update={
            "conclusions": conclusions,
            "findings": findings,
            "inferences": inferences,
            "allowed_actions": material.allowed_actions,
        }
    )
    if not material.confirmed_findings and not material.reasonable_inferences:
        # Nothing to state but the gaps: code says so. A model here can only add (measured on a
        # 1.5B model: "当前系统没有告警" from a search that found nothing, and its prompt's placeholder).
        answer = answer_from_material(material)
        recorder.step_recorded(
            StepRecord(
                round=final.round,
                stage=Stage.COMPOSER,
                status=StepStatus.SKIPPED,
                latency_ms=0,
                thought=NOTHING_TO_COMPOSE,
                model_output={"answer": answer},
            )
        )
        return record, ComposerOutcome(status="skipped", detail=NOTHING_TO_COMPOSE, answer=answer)
    call = stage_run(recorder, final.round, Stage.COMPOSER, lambda: engine.compose(material))
    answer = call.output.answer.strip()
    replacement = answer_from_material(material)
    offending = composer_guard(
        answer=answer,
        material=material,
        excluded_topics=final.excluded_topics,
        vocabulary=world.vocabulary,
        names=world.fact_names,
    )
    if answer and not offending and states_confirmed_finding(answer, material, world.fact_names):
        # The rules engine's composer writes the material as code does: kept as structure.
        prose = "" if answer == replacement else answer
        return record.model_copy(update={"prose": prose}), ComposerOutcome(
            status="valid", answer=answer, offending_tokens=[]
        )
    if not answer:
        detail = "撰写结果为空"
    elif offending:
        detail = "撰写结果包含材料之外的事实：" + "、".join(offending)
    else:
        detail = "撰写结果没有陈述任何已确认的发现"
    return record, ComposerOutcome(
        status="replaced",
        detail=detail,
        discarded_answer=answer,
        answer=replacement,
        offending_tokens=offending,
        parse_status=call.parse_status.as_dict(),
    )
