"""`tool_trace_summary`: a bounded overview of the evidence
tool calls for the Verifier and reviewers. Navigation, not the evidence source.

Evidence tools only; failed and no-hit calls stay visible as gaps; repeated calls of one tool on
one topic in one round are compacted into one entry. Each summary keeps concrete facts first:
alert names and values, log lines with the first and last sample of a repeated pattern, counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from diagnosis.models import ToolInvocation
from diagnosis.services.invocations import (
    FAILED,
    NO_EVIDENCE,
    SUPPORTED,
    is_evidence_call,
    is_guidance_call,
)
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS
from tools.matching import query_groups

SUMMARY_CHARS = 1200
GAP_CHARS = 300
SAMPLE_CHARS = 160
LEVEL_ORDER = {"FATAL": 0, "ERROR": 1, "WARN": 2, "WARNING": 2, "INFO": 3}
DIGITS = re.compile(r"\d+(?:\.\d+)?")


def tool_trace_summary_build(*, invocations: Iterable[ToolInvocation]) -> list[dict]:
    groups: dict[tuple, list[ToolInvocation]] = {}
    for invocation in sorted(invocations, key=lambda invocation: invocation.pk):
        if is_evidence_call(invocation.tool_name):
            groups.setdefault(_topic_key(invocation), []).append(invocation)
    return [_entry(f"trace-{number}", calls) for number, calls in enumerate(groups.values(), start=1)]


def _topic_key(invocation: ToolInvocation) -> tuple:
    """Same round, same tool, same topic: alerts are one topic; a log or knowledge search's topic
    is the synonym groups its query names (any synonym of one group is one topic), else its text."""
    arguments = invocation.input if isinstance(invocation.input, dict) else {}
    if ALERTS.owns(invocation.tool_name):
        return invocation.round, invocation.tool_name
    query = str(arguments.get("query", ""))
    return invocation.round, invocation.tool_name, tuple(sorted(query_groups(query))) or query.strip().lower()


def _entry(trace_ref: str, calls: list[ToolInvocation]) -> dict:
    statuses = [call.evidence_status if call.success else FAILED for call in calls]
    hits = [call for call, status in zip(calls, statuses, strict=True) if status == SUPPORTED]
    tool_name = calls[0].tool_name
    # Guidance (runbooks, past cases) is never a direct observation of the incident.
    hit_level = "indirect" if is_guidance_call(tool_name) else "direct"
    return {
        "trace_ref": trace_ref,
        "tool_name": tool_name,
        "source_invocation_ids": [call.pk for call in calls],
        "evidence_level": hit_level if hits else "none",
        "output_summary": _summary(tool_name, hits=hits, calls=calls, statuses=statuses),
        "invocation_count": len(calls),
        "no_hit_invocation_count": statuses.count(NO_EVIDENCE),
        "failed_invocation_count": statuses.count(FAILED),
    }


def _summary(
    tool_name: str, *, hits: list[ToolInvocation], calls: list[ToolInvocation], statuses: list[str]
) -> str:
    gaps = []
    no_hits = [
        ref["text"]
        for call, status in zip(calls, statuses, strict=True)
        if status == NO_EVIDENCE
        for ref in call.evidence_refs
    ]
    if no_hits:
        gaps.append(_clip(f"未命中 {len(no_hits)} 次: " + "; ".join(no_hits), GAP_CHARS))
    errors = [call.error or "未知错误" for call in calls if not call.success]
    if errors:
        gaps.append(_clip(f"调用失败 {len(errors)} 次: " + "; ".join(dict.fromkeys(errors)), GAP_CHARS))
    budget = SUMMARY_CHARS - sum(len(gap) + 3 for gap in gaps)
    facts = _facts(tool_name, hits, budget) if hits else ""
    return " | ".join(part for part in (facts, *gaps) if part)


def _facts(tool_name: str, hits: list[ToolInvocation], budget: int) -> str:
    records = [record for call in hits for record in call.tool_result().records]
    if ALERTS.owns(tool_name):
        return _alert_facts(records, budget)
    if LOGS.owns(tool_name):
        return _log_facts(records, budget)
    if KNOWLEDGE.owns(tool_name):
        return _knowledge_facts(records, budget)
    return _bounded("", list(dict.fromkeys(_clip(r.ref_text(), SAMPLE_CHARS) for r in records)), budget, "条")


def _alert_facts(alerts: list[AlertRecord], budget: int) -> str:
    lines = dict.fromkeys(
        f"{a.alert_name} {a.state} service={a.service} duration={a.duration}: "
        + _clip(a.description, SAMPLE_CHARS)
        for a in alerts
    )
    return _bounded("metric_evidence: ", list(lines), budget, "条告警")


def _log_line(record: LogLine) -> str:
    time_of_day = record.timestamp[11:16] or record.timestamp
    message = _clip(record.message, SAMPLE_CHARS)
    return f"[{time_of_day}][{record.level}][{record.service}] {message}"


def _log_facts(logs: list[LogLine], budget: int) -> str:
    """One line per message pattern (numbers masked): the newest sample, and for a repeated
    pattern its count and oldest sample, so a trend keeps both ends."""
    unique = list({(log.timestamp, log.service, log.message): log for log in logs}.values())
    patterns: dict[tuple, list[LogLine]] = {}
    for log in unique:
        key = (log.level, log.service, DIGITS.sub("#", log.message))
        patterns.setdefault(key, []).append(log)
    ordered = sorted(patterns.values(), key=lambda group: LEVEL_ORDER.get(group[0].level, 9))
    lines = []
    for group in ordered:
        newest, oldest = max(group, key=_timestamp), min(group, key=_timestamp)
        line = _log_line(newest)
        if len(group) > 1:
            line += f"（同类 {len(group)} 条，最早 {_log_line(oldest)}）"
        lines.append(line)
    levels = Counter(log.level for log in unique)
    counts = ", ".join(f"{level} {count}" for level, count in sorted(levels.items(), key=_level_rank))
    return _bounded(f"log_evidence（共 {len(unique)} 条: {counts}）: ", lines, budget, "类日志")


def _timestamp(log: LogLine) -> str:
    return log.timestamp


def _level_rank(item: tuple[str, int]) -> int:
    return LEVEL_ORDER.get(item[0], 9)


def _knowledge_facts(blocks: list[RunbookSection], budget: int) -> str:
    fresh = [block for block in blocks if not block.deduped]
    lines = list(
        dict.fromkeys(
            f"[{block.retrieval_layer}/{block.relevance}] {block.title}（{block.source_document}）"
            for block in fresh
        )
    )
    deduped = len(blocks) - len(fresh)
    prefix = "knowledge_guidance（排查参考，非当前事实）: "
    if deduped:
        prefix += f"另有 {deduped} 个知识块为本会话重复返回（无新证据）; "
    return _bounded(prefix, lines, budget, "个知识块")


def _bounded(prefix: str, lines: list[str], budget: int, unit: str) -> str:
    """Prefix plus as many whole lines as fit the budget, then how many were left out."""
    text = prefix
    for index, line in enumerate(lines):
        separator = "; " if index else ""
        rest = len(lines) - index - 1
        reserve = len(f"; …另有 {rest} {unit}未列出") if rest else 0
        if len(text) + len(separator) + len(line) + reserve > budget:
            return _clip(f"{text}{separator}…另有 {len(lines) - index} {unit}未列出", budget)
        text += separator + line
    return _clip(text, budget)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
