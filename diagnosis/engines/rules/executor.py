"""The rules engine's executor: calls the tools the plan needs, then states one claim per observed
fact, quoting evidence_refs text exactly (limit claims, not evidence)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from diagnosis.pipeline.contracts import (
    NO_EVIDENCE_PATH,
    Claim,
    ClaimType,
    EvidenceBinding,
    ExecutorInput,
    ExecutorOutput,
    record_path_parts,
)
from diagnosis.pipeline.interfaces import Toolbox, call_key
from tools.configured_vocabulary import current_vocabulary
from tools.evidence_kinds import ALERTS, KNOWLEDGE, LOGS, SERIES
from tools.loglines import evidence_parts, has_property
from tools.matching import group_term, groups_in, term_pattern
from tools.numbers import number_text
from tools.vocabulary import Vocabulary

MAX_BINDINGS_PER_CLAIM = 6
MAX_GUIDANCE_CLAIMS = 2
LIST_MARKER = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")


@dataclass
class _Gathered:
    messages: list[dict] = field(default_factory=list)
    alert_messages: list[dict] = field(default_factory=list)
    # (topic, message) pairs of log searches, in call order.
    log_searches: list[tuple[str, dict]] = field(default_factory=list)
    knowledge_messages: list[dict] = field(default_factory=list)
    # query_promql re-evaluations of firing alerts' own `expr`, by expr.
    expr_messages: dict[str, dict] = field(default_factory=dict)
    # (topic, service, message) of the topic's PromQL queries (the vocabulary's `promql_topics`).
    metric_queries: list[tuple[str, str, dict]] = field(default_factory=list)
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
    planned = {step.tool for step in plan.steps}
    gathered = _Gathered()
    earlier = {call_key(m["tool_name"], m.get("arguments", {})): m for m in stage_input.prior_tool_messages}

    wants_guidance = KNOWLEDGE.tool in planned or (stage_input.retry_context and not plan.narrow_scope)
    # Keep one call of the round's budget for the runbooks when they were asked for.
    reserved = 1 if wants_guidance else 0

    budget = toolbox.remaining_calls

    def turn(requests: list[tuple[str, dict, int]]) -> list[dict | None]:
        """One turn of independent calls (tool, arguments, calls to keep back for later), recorded
        together; the message of each, None for a call left out when the budget ran out."""
        nonlocal budget
        planned_calls: list[tuple[str, dict]] = []
        slots: list[int | dict | None] = []
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
        messages = [recorded[slot] if isinstance(slot, int) else slot for slot in slots]
        gathered.messages.extend(message for message in messages if message is not None)
        return messages

    # PromQL only when a Prometheus source answers it (the demo world has none).
    promql = SERIES.tool in {tool["function"]["name"] for tool in toolbox.tool_definitions()}
    # First turn: the alerts, which tell the second what to look for (their services, topics, exprs).
    metrics_calls = _metrics_calls(services, alerts) if ALERTS.tool in planned else []
    for message in turn([(ALERTS.tool, arguments, reserved) for arguments in metrics_calls]):
        if message:
            gathered.alert_messages.append(message)

    second: list[tuple[str, dict, int]] = []
    on_message: list = []

    def plan_call(tool_name: str, arguments: dict, keep: Callable[[dict], None], keep_back: int) -> None:
        second.append((tool_name, arguments, keep_back))
        on_message.append(keep)

    for expr in _firing_exprs(gathered.alert_messages) if promql else []:
        plan_call(SERIES.tool, {"query": expr}, partial(gathered.expr_messages.__setitem__, expr), reserved)
    log_services = services or _alert_services(gathered.alert_messages) or [None]
    if LOGS.tool in planned and asks_cause:
        alert_topics = [
            t
            for m in gathered.alert_messages
            for a in _records(m, "alerts")
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
            gathered.knowledge_messages.append,
            0,
        )
    for keep, message in zip(on_message, turn(second), strict=True):
        if message:
            keep(message)
    return _claims_from(
        gathered,
        subjects=[*focus.services, *focus.alerts],
        alerts_asked=alerts,
        topics_asked=[] if asks_cause else topics,
        own_asked=topics if asks_cause else [],
        vocabulary=vocabulary,
    )


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


def _firing_exprs(alert_messages: list[dict]) -> list[str]:
    return list(
        dict.fromkeys(
            alert["expr"]
            for message in alert_messages
            for alert in _records(message, "alerts")
            if alert.get("expr") and alert["state"] == "firing"
        )
    )


def _series_of(message: dict | None, labels: dict) -> list[dict]:
    """The refs of the series of an alert's expr that this alert is about (its labels carry theirs)."""
    if not message:
        return []
    series = _records(message, "series")
    return [
        ref
        for record, ref in zip(series, _refs(message), strict=False)
        if (record.get("metric") or {}).items() - {("__name__", record["metric"].get("__name__"))}
        <= labels.items()
    ]


def _alert_services(alert_messages: list[dict]) -> list[str]:
    return list(dict.fromkeys(alert["service"] for m in alert_messages for alert in _records(m, "alerts")))


def _alert_topics(alert: dict, vocabulary: Vocabulary) -> list[str]:
    """An alert's topic: the vocabulary's, else the groups its name is a term of."""
    topic = vocabulary.alert_topics.get(alert["alert_name"])
    return [topic] if topic else sorted(groups_in(alert["alert_name"]))


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

    for message in gathered.alert_messages:
        for alert, ref in zip(_records(message, "alerts"), _refs(message), strict=False):
            own = _alert_topics(alert, vocabulary)
            alert_topics = {*own, *(related for topic in own for related in vocabulary.related(topic))}
            if (
                topics_asked
                and not alert_topics & set(topics_asked)
                and alert["alert_name"] not in alerts_asked
            ):
                # An alert the question did not ask about: context, not a claim, but never dropped silently.
                left_out.append(f"{alert['service']} 的 {alert['alert_name']} 告警与所问主题无关，未纳入结论")
                continue
            # The alert's own topic first, then its related ones; a line about a topic the question
            # asks for in its own right is not folded into the alert (it gets a claim of its own).
            candidates = []
            for log_topic, log_message in gathered.log_searches:
                for log_ref in _refs(log_message):
                    if (
                        log_ref["raw_path"] == NO_EVIDENCE_PATH
                        or evidence_parts(log_ref["text"])[1] != alert["service"]
                    ):
                        continue
                    ref_topics = {log_topic} if log_topic else groups_in(evidence_parts(log_ref["text"])[2])
                    if not ref_topics & alert_topics or (ref_topics & set(own_asked) - set(own)):
                        continue
                    candidates.append((not ref_topics & set(own), log_message, log_ref))
            candidates.sort(key=lambda item: item[0])
            # The alert's own expr re-evaluated (query_promql): the sample of this very alert.
            sample_message = gathered.expr_messages.get(alert.get("expr") or "")
            sample_bindings = [
                EvidenceBinding.of_ref(sample_message, series_ref)
                for series_ref in _series_of(sample_message, alert.get("labels") or {})
            ][: MAX_BINDINGS_PER_CLAIM - 1]
            room = MAX_BINDINGS_PER_CLAIM - 1 - len(sample_bindings)
            log_bindings = []
            for _, log_message, log_ref in candidates[:room]:
                log_bindings.append(EvidenceBinding.of_ref(log_message, log_ref))
                used_log_refs.add((log_message["invocation_id"], log_ref["raw_path"]))
            if overflow := candidates[room:]:
                for _, log_message, log_ref in overflow:
                    used_log_refs.add((log_message["invocation_id"], log_ref["raw_path"]))
                left_out.append(f"另有 {len(overflow)} 条{alert['service']} 的相关日志未逐条引用")
            value = alert.get("value")
            value_text = (
                f"，当前值 {number_text(str(value))}"
                if value not in (None, "") and str(value) not in alert["description"]
                else ""
            )
            # An alert without a description reads "告警（firing），当前值 …", never "：，".
            described = f"：{alert['description']}" if alert["description"] else ""
            add(
                "observation",
                f"{alert['service']} 当前存在 {alert['alert_name']} 告警（{alert['state']}）{described}{value_text}",
                [EvidenceBinding.of_ref(message, ref), *sample_bindings, *log_bindings],
            )

    for topic, message in gathered.log_searches:
        fresh = [
            ref
            for ref in _refs(message)
            if ref["raw_path"] != NO_EVIDENCE_PATH
            and (message["invocation_id"], ref["raw_path"]) not in used_log_refs
        ]
        # One claim per observed fact: lines of one service about the same things (OOM apart from pool),
        # labelled by what the lines are, by the rule the label check holds claims to.
        by_fact: dict[tuple[str, frozenset[str], str], list[dict]] = {}
        for ref in fresh:
            level, service, line = evidence_parts(ref["text"])
            groups = frozenset(groups_in(line))
            wanted = topic or next((t for t in gathered.searched_topics if t in groups), "")
            label_topic = (
                wanted if has_property(wanted, level=level, message=line, vocabulary=vocabulary) else ""
            )
            by_fact.setdefault((service, groups, label_topic), []).append(ref)
        for (service, _, label_topic), refs in by_fact.items():
            label = vocabulary.label(label_topic) if label_topic else ""
            add(
                "observation",
                f"{service} 的{label}日志记录：{evidence_parts(refs[0]['text'])[2]}",
                [EvidenceBinding.of_ref(message, ref) for ref in refs],
            )

    for topic, service, message in gathered.metric_queries:
        for ref in _refs(message):
            if ref["raw_path"] != NO_EVIDENCE_PATH:
                add(
                    "observation",
                    f"{service} 的{vocabulary.label(topic)}指标：{ref['text']}",
                    [EvidenceBinding.of_ref(message, ref)],
                )

    # A question about named subjects gets the blocks that name them (an exact hit of its search, or
    # a past case of the service), not another service's runbook that only shares a word with it.
    for message in gathered.knowledge_messages:
        blocks = _records(message, "evidence_blocks")
        refs = [ref for ref in _refs(message) if not subjects or _names_one_of(blocks, ref, subjects)]
        for ref in refs[:MAX_GUIDANCE_CLAIMS]:
            if ref["raw_path"] != NO_EVIDENCE_PATH:
                title, content = _knowledge_parts(ref["text"])
                add(
                    "risk",
                    f"处置手册《{title}》的排查参考（非当前事实）：{_first_lines(content)}",
                    [EvidenceBinding.of_ref(message, ref)],
                )

    for message in gathered.messages:
        if message["evidence_status"] == "no_evidence":
            ref = _refs(message)[0]
            add("negative_observation", ref["text"], [EvidenceBinding.of_ref(message, ref)])

    failed = [m for m in gathered.messages if not m["success"]]
    missing_info = [f"{m['tool_name']} 调用失败{_failed_source(m)}，相关证据缺失" for m in failed]
    missing_info += [f"本轮工具调用次数已用完，未执行 {label}" for label in gathered.skipped]
    missing_info += left_out
    if alerts_asked and not gathered.alert_messages:
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


def _records(message: dict, key: str) -> list[dict]:
    output = message.get("output") or {}
    return output.get(key, []) if message["success"] else []


def _names_one_of(blocks: list[dict], ref: dict, subjects: list[str]) -> bool:
    parts = record_path_parts(ref["raw_path"])
    if parts is None or parts[0] != "evidence_blocks" or parts[1] >= len(blocks):
        return False
    block = blocks[parts[1]]
    text = f"{block.get('title', '')}\n{block.get('content', '')}".lower()
    return bool(block.get("matched_terms")) or any(term_pattern(name).search(text) for name in subjects)


def _refs(message: dict) -> list[dict]:
    return message.get("evidence_refs") or []


def _knowledge_parts(text: str) -> tuple[str, str]:
    """Split a knowledge ref text `{title}（{source}）: {content}` into title and content."""
    head, _, content = text.partition("）: ")
    return head.split("（", 1)[0].strip(), content.strip()


def _first_lines(content: str, limit: int = 160) -> str:
    """Whole lines only, so no number or name is cut in half."""
    text = ""
    for line in (LIST_MARKER.sub("", line).strip() for line in content.splitlines() if line.strip()):
        joined = f"{text}{'' if not text or text.endswith(('。', '；')) else '；'}{line}"
        if text and len(joined) > limit:
            break
        text = joined
    return text


def _failed_source(message: dict) -> str:
    """Which source failed, so the answer says so."""
    return f"（数据源 {message['source']} 不可用）" if message.get("source") else ""


def _append(found: list, *labels_and_message) -> None:
    """Keep a message with what it was searched for: `(topic, message)` or `(topic, service, message)`."""
    found.append(tuple(labels_and_message))


def _call_label(tool_name: str, arguments: dict) -> str:
    return f"{tool_name}({', '.join(f'{k}={v}' for k, v in arguments.items())})"
