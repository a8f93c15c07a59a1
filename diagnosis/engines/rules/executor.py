"""The rules engine's executor: calls the tools the plan needs, then states one claim per observed
fact, quoting evidence_refs text exactly (limit claims, not evidence)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from diagnosis.pipeline.alert_statement import alert_observation
from diagnosis.pipeline.contracts import (
    Claim,
    ClaimType,
    EvidenceBinding,
    ExecutorInput,
    ExecutorOutput,
)
from diagnosis.pipeline.interfaces import Toolbox, call_key
from diagnosis.pipeline.scope import text_mentions_excluded
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.kind import EvidenceKind
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS, SERIES, tool_label
from tools.evidence.result import NO_EVIDENCE, Ref, ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.loglines import has_property
from tools.matching import group_term, groups_in, term_pattern
from tools.vocabulary import Vocabulary

MAX_BINDINGS_PER_CLAIM = 6
# How the evidence an inference (root-cause candidates, changes) rests on is stated.
MOVED_SERIES = "结论所据："
MAX_GUIDANCE_CLAIMS = 2
LIST_MARKER = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")


@dataclass
class _Gathered:
    results: list[ToolResult] = field(default_factory=list)
    alert_results: list[ToolResult] = field(default_factory=list)
    # (topic, result) pairs of log searches, in call order.
    log_searches: list[tuple[str, ToolResult]] = field(default_factory=list)
    knowledge_results: list[ToolResult] = field(default_factory=list)
    # query_promql re-evaluations of firing alerts' own `expr`, by expr.
    expr_results: dict[str, ToolResult] = field(default_factory=dict)
    # (topic, service, result) of the topic's PromQL queries (the vocabulary's `promql_topics`).
    metric_queries: list[tuple[str, str, ToolResult]] = field(default_factory=list)
    # Topics of the log searches: asked, related, and the fetched alerts' own (cause questions).
    searched_topics: list[str] = field(default_factory=list)
    # Searches left out because the round's tool-call budget ran out.
    skipped: list[str] = field(default_factory=list)


def execute_by_rules(stage_input: ExecutorInput, toolbox: Toolbox) -> ExecutorOutput:
    plan = stage_input.plan
    vocabulary = current_vocabulary()
    focus = stage_input.focus
    services = [*focus.services, *focus.unknown_services]
    alerts = [*focus.alerts, *focus.unknown_alerts]
    topics = list(focus.topics)
    # A cause question is answered from everything about its subject: all its alerts, its logs on
    # the related topics. A narrow one stays narrow.
    asks_cause = focus.asks_cause and not plan.narrow_scope and bool(services or alerts)
    # A planned kind no source serves is not called: the round says it has none.
    available = {tool["function"]["name"] for tool in toolbox.tool_definitions()}
    planned = {step.tool for step in plan.steps} & available
    gathered = _Gathered()
    earlier = {call_key(r.tool_name, r.arguments): r for r in stage_input.prior_results}

    wants_guidance = KNOWLEDGE.tool in planned or (stage_input.retry_context and not plan.narrow_scope)
    # Keep one call of the round's budget for the runbooks when they were asked for.
    reserved = 1 if wants_guidance else 0

    budget = toolbox.remaining_calls

    def turn(requests: list[tuple[str, dict, int]]) -> list[ToolResult | None]:
        """One turn of independent calls (tool, arguments, calls to keep back for later), recorded
        together; the result of each, None for a call left out when the budget ran out."""
        nonlocal budget
        planned_calls: list[tuple[str, dict]] = []
        slots: list[int | ToolResult | None] = []
        for tool_name, arguments, keep_back in requests:
            key = call_key(tool_name, arguments)
            if key in earlier:  # round 2 must not repeat a search already done: reuse its record
                slots.append(earlier[key])
            elif budget > keep_back:
                budget -= 1
                slots.append(len(planned_calls))
                planned_calls.append((tool_name, arguments))
            else:
                gathered.skipped.append(_call_label(tool_name, arguments))
                slots.append(None)
        recorded = toolbox.call_many(planned_calls) if planned_calls else []
        results = [recorded[slot] if isinstance(slot, int) else slot for slot in slots]
        gathered.results.extend(result for result in results if result is not None)
        return results

    # PromQL only when a Prometheus source answers it (the demo world has none).
    promql = SERIES.tool in available
    # First turn: the alerts, which tell the second what to look for (their services, topics, exprs).
    metrics_calls = _metrics_calls(services, alerts) if ALERTS.tool in planned else []
    for result in turn([(ALERTS.tool, arguments, reserved) for arguments in metrics_calls]):
        if result:
            gathered.alert_results.append(result)

    second: list[tuple[str, dict, int]] = []
    on_result: list = []

    def plan_call(
        tool_name: str, arguments: dict, keep: Callable[[ToolResult], None], keep_back: int
    ) -> None:
        second.append((tool_name, arguments, keep_back))
        on_result.append(keep)

    for expr in _firing_exprs(gathered.alert_results) if promql else []:
        plan_call(SERIES.tool, {"query": expr}, partial(gathered.expr_results.__setitem__, expr), reserved)
    log_services = services or _alert_services(gathered.alert_results) or [None]
    if LOGS.tool in planned and asks_cause:
        alert_topics = [
            t
            for r in gathered.alert_results
            for a, _ in _cited(r, ALERTS)
            for t in _alert_topics(a, vocabulary)
        ]
        wanted = [*topics, *alert_topics]
        gathered.searched_topics = list(
            dict.fromkeys([*wanted, *(r for t in wanted for r in vocabulary.related(t))])
        )
        query = " ".join(dict.fromkeys(group_term(topic) for topic in gathered.searched_topics or ["error"]))
        for service in log_services:
            arguments = {"query": query[:500]} | ({"service": service} if service else {})
            plan_call(LOGS.tool, arguments, partial(_append, gathered.log_searches, ""), reserved)
    elif LOGS.tool in planned:
        for topic in topics or ["error"]:
            for service in log_services:
                arguments = {"query": group_term(topic)} | ({"service": service} if service else {})
                plan_call(LOGS.tool, arguments, partial(_append, gathered.log_searches, topic), reserved)
    # The topic's PromQL queries (a cause question's related topics too), when Prometheus answers them.
    if LOGS.tool in planned and promql:
        for topic in gathered.searched_topics if asks_cause else topics:
            for service in filter(None, log_services):
                for query in vocabulary.topic_queries(topic, service=service, carrier=stage_input.carrier):
                    plan_call(
                        SERIES.tool,
                        {"query": query},
                        partial(_append, gathered.metric_queries, topic, service),
                        reserved,
                    )
    if wants_guidance:
        plan_call(
            KNOWLEDGE.tool,
            {"query": stage_input.query[:200]},
            gathered.knowledge_results.append,
            0,
        )
    for keep, result in zip(on_result, turn(second), strict=True):
        if result:
            keep(result)
    output = _claims_from(
        gathered,
        subjects=[*focus.services, *focus.alerts],
        alerts_asked=alerts,
        topics_asked=[] if asks_cause else topics,
        own_asked=topics if asks_cause else [],
        vocabulary=vocabulary,
    )
    moved = moved_claims(
        stage_input.inference_refs, excluded=stage_input.plan.excluded_topics, vocabulary=vocabulary
    )
    return output.model_copy(update={"claims": [*moved, *output.claims]})


def moved_claims(
    inference_refs: list[EvidenceBinding], *, excluded: list[str], vocabulary: Vocabulary
) -> list[Claim]:
    """The series an investigation's candidates rest on, each stated as what its record says; none
    about a topic the user said not to analyse (either engine states them: quoted by code)."""
    unique = {
        (b.source_invocation_id, b.raw_path): b
        for b in inference_refs
        if not text_mentions_excluded(b.evidence_excerpt, excluded, vocabulary=vocabulary)
    }
    return [
        Claim(
            claim_id=f"moved-{index}",
            claim_type="observation",
            claim_text=f"{MOVED_SERIES}{binding.evidence_excerpt}",
            evidence_bindings=[binding],
        )
        for index, binding in enumerate(unique.values(), start=1)
    ]


def _metrics_calls(services: list[str], alerts: list[str]) -> list[dict]:
    """A question naming a service and an alert asks about that alert on that service."""
    if alerts:
        return [
            {"alert_name": alert} | ({"service": service} if service else {})
            for alert in alerts
            for service in services or [None]
        ]
    if services:
        return [{"service": service} for service in services]
    return [{}]


def _firing_exprs(alert_results: list[ToolResult]) -> list[str]:
    return list(
        dict.fromkeys(
            alert.expr
            for result in alert_results
            for alert, _ in _cited(result, ALERTS)
            if alert.expr and alert.state == "firing"
        )
    )


def _series_of(result: ToolResult | None, labels: dict) -> list[Ref]:
    """The refs of the series of an alert's expr that this alert is about (its labels carry theirs)."""
    if not result:
        return []
    series: list[tuple[SeriesRecord, Ref]] = _cited(result, SERIES)
    return [
        ref
        for record, ref in series
        if record.metric.items() - {("__name__", record.metric.get("__name__"))} <= labels.items()
    ]


def _alert_services(alert_results: list[ToolResult]) -> list[str]:
    return list(dict.fromkeys(alert.service for r in alert_results for alert, _ in _cited(r, ALERTS)))


def _alert_topics(alert: AlertRecord, vocabulary: Vocabulary) -> list[str]:
    """An alert's topic: the vocabulary's, else the groups its name is a term of."""
    topic = vocabulary.alert_topics.get(alert.alert_name)
    return [topic] if topic else sorted(groups_in(alert.alert_name))


def _claims_from(
    gathered: _Gathered,
    *,
    subjects: list[str],
    alerts_asked: list[str],
    topics_asked: list[str],
    own_asked: list[str],
    vocabulary: Vocabulary,
) -> ExecutorOutput:
    claims: list[Claim] = []
    used_log_refs: set[tuple[int, str]] = set()
    left_out: list[str] = []

    def add(claim_type: ClaimType, text: str, bindings: list[EvidenceBinding]) -> None:
        claims.append(
            Claim(
                claim_id=f"claim-{len(claims) + 1}",
                claim_type=claim_type,
                claim_text=text,
                evidence_bindings=bindings[:MAX_BINDINGS_PER_CLAIM],
            )
        )

    for result in gathered.alert_results:
        for alert, ref in _cited(result, ALERTS):
            own = _alert_topics(alert, vocabulary)
            alert_topics = {*own, *(related for topic in own for related in vocabulary.related(topic))}
            if topics_asked and not alert_topics & set(topics_asked) and alert.alert_name not in alerts_asked:
                # An alert the question did not ask about: context, not a claim, but never dropped silently.
                left_out.append(f"{alert.service} 的 {alert.alert_name} 告警与所问主题无关，未纳入结论")
                continue
            # The alert's own topic first, then its related ones; a line about a topic the question
            # asks for in its own right is not folded into the alert (it gets a claim of its own).
            candidates = []
            for log_topic, log_result in gathered.log_searches:
                line: LogLine
                for line, log_ref in _cited(log_result, LOGS):
                    if line.service != alert.service:
                        continue
                    ref_topics = {log_topic} if log_topic else groups_in(line.message)
                    if not ref_topics & alert_topics or (ref_topics & set(own_asked) - set(own)):
                        continue
                    candidates.append((not ref_topics & set(own), log_result, log_ref))
            candidates.sort(key=lambda item: item[0])
            # The alert's own expr re-evaluated (query_promql): the sample of this very alert.
            sample_result = gathered.expr_results.get(alert.expr or "")
            sample_bindings = [
                EvidenceBinding.of_ref(sample_result, series_ref)
                for series_ref in _series_of(sample_result, alert.labels or {})
            ][: MAX_BINDINGS_PER_CLAIM - 1]
            room = MAX_BINDINGS_PER_CLAIM - 1 - len(sample_bindings)
            log_bindings = []
            for _, log_result, log_ref in candidates[:room]:
                log_bindings.append(EvidenceBinding.of_ref(log_result, log_ref))
                used_log_refs.add((log_result.invocation_id, log_ref.path))
            if overflow := candidates[room:]:
                for _, log_result, log_ref in overflow:
                    used_log_refs.add((log_result.invocation_id, log_ref.path))
                left_out.append(f"另有 {len(overflow)} 条{alert.service} 的相关日志未逐条引用")
            add(
                "observation",
                alert_observation(alert),
                [EvidenceBinding.of_ref(result, ref), *sample_bindings, *log_bindings],
            )

    for topic, result in gathered.log_searches:
        fresh = [
            (line, ref)
            for line, ref in _cited(result, LOGS)
            if (result.invocation_id, ref.path) not in used_log_refs
        ]
        # One claim per observed fact: lines of one service about the same things (OOM apart from pool),
        # labelled by what the lines are, by the rule the label check holds claims to.
        by_fact: dict[tuple[str, frozenset[str], str], list[tuple[LogLine, Ref]]] = {}
        for line, ref in fresh:
            groups = frozenset(groups_in(line.message))
            wanted = topic or next((t for t in gathered.searched_topics if t in groups), "")
            label_topic = (
                wanted
                if has_property(wanted, level=line.level, message=line.message, vocabulary=vocabulary)
                else ""
            )
            by_fact.setdefault((line.service, groups, label_topic), []).append((line, ref))
        for (service, _, label_topic), lines in by_fact.items():
            label = vocabulary.label(label_topic) if label_topic else ""
            add(
                "observation",
                f"{service} 的{label}日志记录：{lines[0][0].message}",
                [EvidenceBinding.of_ref(result, ref) for _, ref in lines],
            )

    for topic, service, result in gathered.metric_queries:
        for _, ref in _cited(result, SERIES):
            add(
                "observation",
                f"{service} 的{vocabulary.label(topic)}指标：{ref.text}",
                [EvidenceBinding.of_ref(result, ref)],
            )

    # A question about named subjects gets the blocks that name them (an exact hit of its search, or
    # a past case of the service), not another service's runbook that only shares a word with it.
    for result in gathered.knowledge_results:
        blocks: list[tuple[RunbookSection, Ref]] = _cited(result, KNOWLEDGE)
        named = [(block, ref) for block, ref in blocks if not subjects or _names_one_of(block, subjects)]
        for block, ref in named[:MAX_GUIDANCE_CLAIMS]:
            add(
                "risk",
                f"处置手册《{block.title}》的排查参考（非当前事实）：{_first_lines(block.content)}",
                [EvidenceBinding.of_ref(result, ref)],
            )

    for result in gathered.results:
        if result.evidence_status == NO_EVIDENCE and (no_hit := result.no_hit()):
            add("negative_observation", no_hit.text, [EvidenceBinding.of_ref(result, no_hit)])

    failed = [r for r in gathered.results if not r.success]
    missing_info = [f"{tool_label(r.tool_name)} 调用失败{_failed_source(r)}，相关证据缺失" for r in failed]
    missing_info += [f"本轮工具调用次数已用完，未执行 {label}" for label in gathered.skipped]
    missing_info += left_out
    if alerts_asked and not gathered.alert_results:
        missing_info.append("未能查询告警状态")
    # Named by its source, not its tool: an action may only name what the verified material names.
    actions = list(dict.fromkeys(f"重试失败的查询{_failed_source(m)}" for m in failed))
    summary = "；".join(claim.claim_text for claim in claims) or "未获得可引用的证据"
    return ExecutorOutput(
        claims=claims,
        hypotheses=[],
        missing_info=missing_info,
        recommended_actions=actions,
        diagnosis_summary=summary[:500],
        user_facing_answer=summary,
    )


def _cited(result: ToolResult, kind: EvidenceKind) -> list[tuple[Any, Ref]]:
    """The records of a successful result of that kind, each with the ref that cites it."""
    return result.cited() if result.success and kind.owns(result.tool_name) else []


def _names_one_of(block: RunbookSection, subjects: list[str]) -> bool:
    text = f"{block.title}\n{block.content}".lower()
    return bool(block.matched_terms) or any(term_pattern(name).search(text) for name in subjects)


def _first_lines(content: str, limit: int = 160) -> str:
    """Whole lines only, so no number or name is cut in half."""
    text = ""
    for line in (LIST_MARKER.sub("", line).strip() for line in content.splitlines() if line.strip()):
        joined = f"{text}{'' if not text or text.endswith(('。', '；')) else '；'}{line}"
        if text and len(joined) > limit:
            break
        text = joined
    return text


def _failed_source(result: ToolResult) -> str:
    """Which source failed, so the answer says so."""
    return f"（数据源 {result.source} 不可用）" if result.source else ""


def _append(found: list, *labels_and_result) -> None:
    """Keep a result with what it was searched for: `(topic, result)` or `(topic, service, result)`."""
    found.append(tuple(labels_and_result))


def _call_label(tool_name: str, arguments: dict) -> str:
    return f"{tool_label(tool_name)}({', '.join(f'{k}={v}' for k, v in arguments.items())})"
