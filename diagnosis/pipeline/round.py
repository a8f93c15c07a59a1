"""One round, as a function over the engine and the recorder:

    asks (code) → planner → the asks' calls (code) → executor (tool loop, from their results and the
    conclusions code reads from them)
    (its calls' service and alert names grounded in the inventory by code)
    → claim guards (restated conclusion, exclusion, focus, evidence as data) → gatekeeper with the
    binding guards (label check) → slots (code, verified)
    → verifier → verdict (code) → verdict guards (citation cap, coverage) → route
    (gaps: the verifier's and the caps', plus every empty or failed call nothing cites, by name and source)

The question is read once per session (`Question`: window, scope, focus, asks, against the session's
`World`) and handed to every round, and by it to the planner and executor, as plain data.

Stages run by the engine are recorded as steps, also when they fail (then the error goes up).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from diagnosis.pipeline.argument_grounding import NamesGrounded
from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.action import only_actions
from diagnosis.pipeline.asks.calls import CallsReused, plan_tools, slot_calls_run
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.asks.registry import KINDS, ask_label
from diagnosis.pipeline.asks.slots import conclusion_lines, open_asks, slots_read, slots_verified
from diagnosis.pipeline.claims_under_check import claims_under_check
from diagnosis.pipeline.contracts import (
    EvidenceBinding,
    ExecutorInput,
    ExecutorOutput,
    FactCheck,
    PlannerInput,
    PlannerOutput,
    PlanStep,
    RankedCandidate,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.focus import QuestionFocus, World
from diagnosis.pipeline.gatekeeper import GatekeeperResult, gatekeep
from diagnosis.pipeline.guards import (
    CANDIDATE_RULE,
    RESTATED_RULE,
    GuardedOutput,
    RoundContext,
    bindings_guarded,
    claim_guards_run,
    verdict_capped,
)
from diagnosis.pipeline.interfaces import (
    Engine,
    ParseStatus,
    Recorder,
    Stage,
    StageCall,
    StepRecord,
    StepStatus,
)
from diagnosis.pipeline.question import Question
from diagnosis.pipeline.records import RoundRecord
from diagnosis.pipeline.routing import Route, route
from diagnosis.pipeline.searched import searched_gaps, unconfigured_gaps
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.verdict import (
    Verification,
    verification_finalize,
    verifier_output_for_gatekeeper_reject,
)
from tools.evidence.registry import PLANNABLE_TOOLS
from tools.evidence.result import ToolResult


@dataclass(frozen=True)
class RoundLimits:
    max_rounds: int
    max_tool_calls: int
    low_confidence_threshold: float


@dataclass(frozen=True)
class RoundResult:
    round: int
    plan: PlannerOutput
    focus: QuestionFocus
    # The round's `verifier_evaluation` record: what it verified, and how.
    record: RoundRecord

    @property
    def executor_output(self) -> ExecutorOutput:
        return self.record.executor_structured_output

    @property
    def gatekeeper_result(self) -> GatekeeperResult:
        return self.record.gatekeeper_result

    @property
    def verification(self) -> Verification:
        return Verification.model_validate(self.record.model_dump(include=set(Verification.model_fields)))

    @property
    def route(self) -> Route:
        return self.record.route

    @property
    def excluded_topics(self) -> list[str]:
        return self.record.excluded_topics


def round_run(
    *,
    question: Question,
    round_number: int,
    retry_context: dict | None,
    earlier: list[RoundResult],
    engine: Engine,
    recorder: Recorder,
    limits: RoundLimits,
    world: World,
    reused: Sequence[ToolResult] = (),
) -> RoundResult:
    asks = list(question.asks)
    prior = _prior_results(recorder, round_number, earlier=earlier, reused=reused)
    plan, asked_calls = _planned(
        question, round_number, retry_context, engine, recorder, limits, world, prior
    )
    executor_call = _executor_run(
        question, round_number, retry_context, engine, recorder, limits, plan, world, prior, asked_calls
    )

    # The question's focus, read again only when the planner excluded more than the question does.
    excluded = question.excluded_with(plan.excluded_topics)
    focus = question.focus_without(excluded, world=world)
    invocations = recorder.invocations()
    results = _round_results(asked_calls, recorder, round_number)
    slots = _slots_filled(asks, asked_calls, results, invocations, world)
    context = RoundContext(question.text, focus, excluded, world, invocations, slots, question.unread)
    judged = _judgement(engine, recorder, round_number, executor_call, context, retry_context)
    notes = focus.notes()  # unknown subjects, nothing understood: said to the user, listed as gaps
    searched = searched_gaps(results=results, output=judged.guarded.kept_output, slots=slots) + unconfigured_gaps(
        planned=[step.tool for step in plan.steps], tools=asked_calls.world.tools, slots=slots
    )
    verification = _gaps_added(judged.verification, first=notes, last=searched)
    next_step = _next_step(verification, round_number, limits, understood=focus.understood)
    record = RoundRecord(
        **dict(verification),
        round=round_number,
        engine=engine.name,
        planner_output=plan,
        executor_output_parse_status=executor_call.parse_status.as_dict(),
        executor_structured_output=judged.guarded.kept_output,
        excluded_topics=excluded,
        asks=asks,
        slots=slots,
        focus=focus.as_dict(),
        focus_notes=notes,
        # What the sources knew when the question was read: the off-topic judgement is made against it.
        inventory=world.inventory.as_dict(query=question.text),
        blocked_claims=judged.guarded.blocked_claims,
        guard_warnings=judged.guarded.warnings,
        blocked_by=judged.guarded.blocked_by(),
        gatekeeper_result=judged.gatekeeper_result,
        tool_trace_summary=judged.trace_summary,
        retry_context=retry_context,
        route=next_step,
        # Each round stored once: the earlier ones here, this one is the record itself.
        rounds=[r.record.model_copy(update={"rounds": []}) for r in earlier],
    )
    return RoundResult(round=round_number, plan=plan, focus=focus, record=record)


def _gaps_added(verification: Verification, *, first: list[str], last: list[str]) -> Verification:
    gaps = list(dict.fromkeys([*first, *verification.gaps, *last]))
    return verification.model_copy(update={"gaps": gaps})


def _next_step(
    verification: Verification, round_number: int, limits: RoundLimits, *, understood: bool
) -> Route:
    return route(
        verdict=verification.verdict,
        score=verification.groundedness_score,
        round=round_number,
        # A question nothing of which is understood has nothing a second round could look for.
        max_rounds=limits.max_rounds if understood else round_number,
        threshold=limits.low_confidence_threshold,
    )


@dataclass(frozen=True)
class Judgement:
    guarded: GuardedOutput
    gatekeeper_result: GatekeeperResult
    verification: Verification
    trace_summary: list[dict]


def _judgement(
    engine: Engine,
    recorder: Recorder,
    round_number: int,
    executor_call: StageCall[ExecutorOutput],
    context: RoundContext,
    retry_context: dict | None,
) -> Judgement:
    """Claim guards → gatekeeper → verifier → verdict (code) → verdict guards."""
    guarded = claim_guards_run(executor_call.output, context)
    gatekeeper_result = gatekeeper_run(recorder, round_number, guarded.kept_output, context)
    trace_summary = recorder.tool_trace_summary()
    verifier_input = VerifierInput(
        original_query=context.query,
        executor_structured_output=guarded.kept_output.model_dump(),
        gatekeeper_result=gatekeeper_result.model_dump(),
        tool_trace_summary=trace_summary,
        executor_output_parse_status=executor_call.parse_status.as_dict(),
        claims=claims_under_check(
            executor_output=guarded.kept_output,
            gatekeeper_result=gatekeeper_result,
            names=context.world.fact_names,
        ),
        retry_context=retry_context,
    )
    verifier_output = _verifier_run(
        engine, recorder, round_number, verifier_input, guarded, gatekeeper_result
    )
    verification = verification_finalize(
        verifier_output=verifier_output,
        executor_output=guarded.kept_output,
        gatekeeper_result=gatekeeper_result,
        guidance_tools=recorder.guidance_tools,
        names=context.world.fact_names,
        # An executor that stated nothing beyond the slots (nothing at all, e.g. a health question, or
        # only restatements of their lines, or root causes code dropped) is answered by the slots alone;
        # claims it did state are what the verdict judges, also when a guard blocked them.
        slot_facts=[_slot_fact(slot) for slot in context.slots if slot.filled]
        if _nothing_beyond_slots(executor_call, guarded)
        else [],
    )
    return Judgement(
        guarded=guarded,
        gatekeeper_result=gatekeeper_result,
        verification=verdict_capped(verification, gatekeeper_result=gatekeeper_result, context=context),
        trace_summary=trace_summary,
    )


def _nothing_beyond_slots(executor_call: StageCall[ExecutorOutput], guarded: GuardedOutput) -> bool:
    if guarded.kept_output.claims or executor_call.parse_status.status == "parse_failed":
        return False
    # A restated conclusion, or a root cause beyond the ranked candidates: the slots say what stands.
    return all(guard in (RESTATED_RULE, CANDIDATE_RULE) for guard in guarded.blocked_by().values())


def _prior_results(
    recorder: Recorder, round_number: int, *, earlier: list[RoundResult], reused: Sequence[ToolResult]
) -> list[ToolResult]:
    """The calls already made for this question: earlier rounds', and `reused` (those of an engine that
    became unavailable). Cited again, never made again."""
    earlier_rounds = recorder.tool_results_before(round=round_number) if earlier else []
    return list({r.invocation_id: r for r in [*reused, *earlier_rounds]}.values())


def _planned(
    question: Question,
    round_number: int,
    retry_context: dict | None,
    engine: Engine,
    recorder: Recorder,
    limits: RoundLimits,
    world: World,
    prior: list[ToolResult],
) -> tuple[PlannerOutput, AskedCalls]:
    """The engine's plan, and the asks' calls made by code and added to the plan (whichever engine
    planned: the executor starts from their results)."""
    asks = list(question.asks)
    planner_input = PlannerInput(
        query=question.text,
        round=round_number,
        retry_context=retry_context,
        focus=question.focus,
        asks=asks,
        narrow_scope=question.narrow_scope,
        excluded_topics=list(question.excluded_topics),
    )
    plan = stage_run(recorder, round_number, Stage.PLANNER, lambda: engine.plan(planner_input)).output
    asked_calls = _asks_called(asks, recorder, round_number, limits, world, prior)
    return _plan_widened(plan, asks, asked_calls.results), asked_calls


@dataclass(frozen=True)
class AskedCalls:
    world: SlotWorld
    results: list[ToolResult]
    # The `结论` lines code reads from them (and earlier rounds' calls): what they already answer.
    conclusions: list[str] = field(default_factory=list)
    # What they leave to the executor: asks whose slot is unfilled, or that ask for reasoning.
    open_asks: list[str] = field(default_factory=list)
    # What the inferences among them (root-cause candidates) rest on: the executor states it.
    inference_refs: list[EvidenceBinding] = field(default_factory=list)
    # The investigations' ranked candidates, and the calls they were computed from.
    candidates: list[RankedCandidate] = field(default_factory=list)
    computed_from: list[int] = field(default_factory=list)
    only_candidates_open: bool = False


def _asks_called(
    asks: list[Ask],
    recorder: Recorder,
    round_number: int,
    limits: RoundLimits,
    world: World,
    prior: list[ToolResult],
) -> AskedCalls:
    # An investigation's range queries are bounded on their own (`AskKind.call_budget`), beside the round's.
    extra = max((KINDS[ask.kind].call_budget for ask in asks), default=0)
    toolbox = recorder.toolbox(round=round_number, max_calls=limits.max_tool_calls + extra)
    slot_world = SlotWorld(
        vocabulary=world.vocabulary,
        service_labels=world.service_labels,
        tools=frozenset(tool["function"]["name"] for tool in toolbox.tool_definitions()),
        now=world.now,
        logs_window_minutes=world.logs_window_minutes,
        carrier=world.carrier,
        label_names=world.label_names,
        families=world.families,
        metrics=world.inventory.metrics,
        services=world.inventory.services,
    )
    asked = AskedCalls(slot_world, slot_calls_run(asks, toolbox=toolbox, world=slot_world, prior=prior))
    results = _round_results(asked, recorder, round_number)
    answered = _slots_filled(asks, asked, results, recorder.invocations(), world)
    return replace(
        asked,
        # A slot's ranked candidates are given as such, not also as its line (the same words twice).
        conclusions=conclusion_lines([slot for slot in answered if not slot.candidates]),
        open_asks=open_asks(answered),
        inference_refs=[b for slot in answered if slot.filled and slot.inference for b in slot.bindings],
        candidates=[c for slot in answered if slot.filled for c in slot.candidates],
        computed_from=list(dict.fromkeys(i for slot in answered if slot.filled for i in slot.computed_from)),
        only_candidates_open=all(
            slot.filled and (slot.candidates or not KINDS[slot.ask.kind].reasoned) for slot in answered
        ),
    )


def _round_results(asked_calls: AskedCalls, recorder: Recorder, round_number: int) -> list[ToolResult]:
    """Every call of the round and before it, the asks' first (evidence is evidence, whoever asked for it)."""
    made = {r.invocation_id for r in asked_calls.results}
    return [
        *asked_calls.results,
        *(r for r in recorder.tool_results_before(round=round_number + 1) if r.invocation_id not in made),
    ]


def _slots_filled(
    asks: list[Ask],
    asked_calls: AskedCalls,
    results: list[ToolResult],
    invocations: Sequence[ToolResult],
    world: World,
) -> list[Slot]:
    """Each ask's slot, read from every call of the round (the executor's too) and kept filled only
    where the gatekeeper verifies its citations."""
    return slots_verified(
        slots_read(asks, results=results, world=asked_calls.world),
        invocations=invocations,
        names=world.fact_names,
    )


def _slot_fact(slot: Slot) -> FactCheck:
    """A slot code filled from verified output is direct evidence; one that infers from it (root-cause
    candidates) is at most indirect support, never a verified cause."""
    return FactCheck(
        fact=slot.line(),
        is_critical=True,
        verification="indirect_support" if slot.inference else "direct_evidence",
        detail="根因候选由代码按已核验的工具输出推断，未经证实"
        if slot.inference
        else "所问的槽位由代码按已核验的工具输出填写",
        evidence_refs=[f"{b.tool_name} #{b.source_invocation_id} {b.raw_path}" for b in slot.bindings],
    )


def _plan_widened(plan: PlannerOutput, asks: list[Ask], slot_results: list[ToolResult]) -> PlannerOutput:
    """The plan holds the asks' calls, whichever engine planned: code says so in the step. An action
    asked alone is answered by code's statement: no planned search about its subject (measured: a 1.5B
    planner planned the subject's alerts and logs, and the executor's findings about it were rejected)."""
    if only_actions(asks):
        return plan.model_copy(update={"steps": []})
    planned = {step.tool for step in plan.steps}
    added = [
        PlanStep(tool=tool, purpose=f"代码按所问补充：{'、'.join(ask_label(a) for a in asks)}")
        for tool in plan_tools(asks, slot_results)
        if tool not in planned and tool in PLANNABLE_TOOLS
    ]
    return plan.model_copy(update={"steps": [*plan.steps, *added]}) if added else plan


def _executor_run(
    question: Question,
    round_number: int,
    retry_context: dict | None,
    engine: Engine,
    recorder: Recorder,
    limits: RoundLimits,
    plan: PlannerOutput,
    world: World,
    prior: list[ToolResult],
    asked_calls: AskedCalls,
) -> StageCall[ExecutorOutput]:
    """The executor, from the calls already made (earlier rounds', the asks') and what they answer."""
    prior_results = [*prior, *asked_calls.results]
    toolbox = NamesGrounded(
        CallsReused(recorder.toolbox(round=round_number, max_calls=limits.max_tool_calls), prior_results),
        inventory=world.inventory,
        asked=[*question.focus.unknown_services, *question.focus.unknown_alerts],
    )
    # A retry round may cite (and must not repeat) what earlier rounds and the asks' calls found.
    stage_input = ExecutorInput(
        query=question.text,
        plan=plan,
        round=round_number,
        retry_context=retry_context,
        prior_results=prior_results,
        focus=question.focus,
        carrier=world.carrier,
        conclusions=asked_calls.conclusions,
        open_asks=asked_calls.open_asks,
        inference_refs=asked_calls.inference_refs,
        candidates=asked_calls.candidates,
        computed_from=asked_calls.computed_from,
        # A narrow confirmation states observations only, and exclusions are the user's boundary to
        # hold claim by claim: neither is only the candidates to explain.
        only_candidates_open=asked_calls.only_candidates_open
        and not question.narrow_scope
        and not question.excluded_topics,
    )
    return stage_run(recorder, round_number, Stage.EXECUTOR, lambda: engine.execute(stage_input, toolbox))


def gatekeeper_run(
    recorder: Recorder, round_number: int, output: ExecutorOutput, context: RoundContext
) -> GatekeeperResult:
    """The gatekeeper with the binding guards over `output`'s claims, recorded as the round's step."""
    started = time.perf_counter()
    recorder.stage_started(stage=Stage.GATEKEEPER, round=round_number)
    result = bindings_guarded(
        gatekeep(executor_output=output, invocations=context.invocations, names=context.world.fact_names),
        output=output,
        context=context,
    )
    recorder.step_recorded(
        StepRecord(
            round=round_number,
            stage=Stage.GATEKEEPER,
            status=StepStatus.OK,
            latency_ms=_elapsed_ms(started),
            thought=_gatekeeper_thought(result),
            model_output=result.model_dump(),
        )
    )
    return result


def _verifier_run(
    engine: Engine,
    recorder: Recorder,
    round_number: int,
    stage_input: VerifierInput,
    guarded: GuardedOutput,
    gatekeeper_result: GatekeeperResult,
) -> VerifierOutput:
    """The engine's verifier, except on fabricated citations: then it is not consulted."""
    if gatekeeper_result.severity != "reject":
        return stage_run(recorder, round_number, Stage.VERIFIER, lambda: engine.verify(stage_input)).output
    verifier_output = verifier_output_for_gatekeeper_reject(
        executor_output=guarded.kept_output, gatekeeper_result=gatekeeper_result
    )
    recorder.step_recorded(
        StepRecord(
            round=round_number,
            stage=Stage.VERIFIER,
            status=StepStatus.SKIPPED,
            latency_ms=0,
            thought="引用核验判定为伪造证据（reject），未调用校验模型",
            model_output=verifier_output.model_dump(),
        )
    )
    return verifier_output


def stage_run(recorder: Recorder, round_number: int, stage: Stage, run: Callable[[], StageCall]) -> StageCall:
    """Run one engine stage and record it as a step (also on failure, then re-raise)."""
    recorder.stage_started(stage=stage, round=round_number)
    started = time.perf_counter()
    try:
        call = run()
    except Exception as exc:
        # An endpoint's own error text (paths, stack traces) is for staff: kept on the step only.
        staff_detail = getattr(exc, "staff_detail", None)
        failure = (
            {"error_id": getattr(exc, "error_id", ""), "server_error": staff_detail} if staff_detail else None
        )
        recorder.step_recorded(
            StepRecord(
                round=round_number,
                stage=stage,
                status=StepStatus.FAILED,
                latency_ms=_elapsed_ms(started),
                thought=f"{type(exc).__name__}: {exc}",
                model_output=_snapshot(failure, None),
            )
        )
        raise
    recorder.step_recorded(
        StepRecord(
            round=round_number,
            stage=stage,
            status=StepStatus.FALLBACK if call.parse_status.status == "parse_failed" else StepStatus.OK,
            latency_ms=_elapsed_ms(started),
            thought=call.thought,
            model_output=_snapshot(
                call.model_output if call.model_output is not None else call.output.model_dump(),
                call.parse_status,
            ),
            usage=call.usage,
            prompt_version=call.prompt_version,
        )
    )
    return call


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _snapshot(model_output: object, parse_status: ParseStatus | None) -> dict:
    snapshot = model_output if isinstance(model_output, dict) else {"raw": model_output}
    if parse_status is not None:
        snapshot = snapshot | {"parse_status": parse_status.as_dict()}
    return snapshot


def _gatekeeper_thought(result: GatekeeperResult) -> str:
    rules = "、".join(result.failed_rules) or "无"
    return f"引用核验 {result.status}（{result.severity}）；失败规则：{rules}"
