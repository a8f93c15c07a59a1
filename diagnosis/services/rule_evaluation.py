"""Rule evaluation: how well a session gathered evidence, scored by code.

It measures evidence collection only, not whether the answer reasons correctly (that is the
verifier's job), and needs no LLM. It runs in the background once a session has ended. A PASS
whose kept claims are about a subject the question did not ask scores 0, and so does a PASS with an
ask left unanswered (verified means quoted, on topic and answering what was asked).
"""

from django.db import transaction
from django_q.tasks import async_task

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.asks.registry import ask_label
from diagnosis.pipeline.slot import Slot
from diagnosis.selectors.self_evaluation import RULE_EVALUATION, VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.selectors.world import off_topic_claims
from diagnosis.services.invocations import is_evidence_call, is_guidance_call
from diagnosis.services.self_evaluation import self_evaluation_merge

SCORE_MIN, SCORE_MAX = 0, 100


def _factor(name: str, delta: int, detail: str) -> dict:
    return {"name": name, "delta": delta, "detail": detail}


def _retrieval_layers(invocation: ToolInvocation) -> set[str]:
    return set((invocation.retrieval_details or {}).get("retrieval_layers") or ())


def _factors(*, session: DiagnosisSession, calls: list[ToolInvocation]) -> list[dict]:
    """The factors that apply, in table order; an empty score factor short-circuits the rest."""
    if session.status == DiagnosisSession.Status.FAILED:
        return [_factor("execution_failed", 0, "会话执行失败，证据分直接记 0")]
    if not calls:
        return [_factor("no_tool_call", 0, "没有任何证据工具调用，证据分直接记 0")]

    factors = []
    succeeded = [call for call in calls if call.success]
    if succeeded:
        factors.append(
            _factor("has_successful_tool_call", 30, f"{len(calls)} 次证据工具调用中 {len(succeeded)} 次成功")
        )
    retrievals = [call for call in calls if is_guidance_call(call.tool_name)]
    layers = set().union(*(_retrieval_layers(call) for call in retrievals))
    if "L0" in layers:
        factors.append(_factor("l0_exact_match", 35, "知识检索有 L0 精确命中"))
    elif "L1" in layers:
        factors.append(_factor("l1_semantic_match", 20, "知识检索无 L0 命中，但有 L1 语义命中"))
    elif retrievals:
        factors.append(_factor("retrieval_no_hit", -10, f"{len(retrievals)} 次知识检索均未命中"))
    if not succeeded:
        factors.append(_factor("all_tool_calls_failed", -20, f"{len(calls)} 次证据工具调用全部失败"))
    record = self_evaluation_of(session=session).get(VERIFIER_EVALUATION) or {}
    if record.get("verdict") == "PASS":
        off_topic = off_topic_claims(
            query=session.query, record=record, invocations=list(session.tool_invocations.all())
        )
        if off_topic:
            factors.append(
                _factor(
                    "off_topic_pass", -SCORE_MAX, "PASS 中含有问题之外主题的断言：" + "、".join(off_topic)
                )
            )
        slots = [Slot.model_validate(slot) for slot in record.get("slots") or []]
        if unanswered := [ask_label(slot.ask) for slot in slots if not slot.filled]:
            factors.append(
                _factor("unanswered_pass", -SCORE_MAX, "PASS 但所问未回答：" + "、".join(unanswered))
            )
    return factors


def rule_evaluation_run(*, session_pk: int) -> dict:
    """Score the session's evidence gathering and store it in the `rule_evaluation` slot."""
    session = DiagnosisSession.objects.only("pk", "status", "query", "self_evaluation").get(pk=session_pk)
    calls = [
        call
        for call in ToolInvocation.objects.filter(session_id=session_pk).only(
            "tool_name", "success", "retrieval_details"
        )
        if is_evidence_call(call.tool_name)
    ]
    factors = _factors(session=session, calls=calls)
    score = sum(factor["delta"] for factor in factors)
    evaluation = {
        "evidence_score": min(SCORE_MAX, max(SCORE_MIN, score)),
        "source": "rule",
        "factors": factors,
    }
    self_evaluation_merge(session_pk=session_pk, slot=RULE_EVALUATION, value=evaluation)
    return evaluation


def rule_evaluation_enqueue(*, session_pk: int, attempt: int = 1) -> None:
    """Queue the rule evaluation once the caller's transaction has committed the ended session."""
    transaction.on_commit(
        lambda: async_task(
            "diagnosis.tasks.rule_evaluation_task",
            session_pk,
            attempt,
            task_name=f"rule_evaluation:{session_pk}:{attempt}",
            group="rule_evaluation",
        )
    )
