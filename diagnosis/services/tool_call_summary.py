"""`tool_trace_summary`: a bounded overview of the evidence
tool calls for the Verifier and reviewers. Navigation, not the evidence source.

Evidence tools only; failed and no-hit calls stay visible as gaps; repeated calls of one tool on
one topic in one round are compacted into one entry. Each summary keeps concrete facts first:
alert names and values, log lines with the first and last sample of a repeated pattern, counts.
"""

from __future__ import annotations

from collections.abc import Iterable

from diagnosis.models import ToolInvocation
from diagnosis.services.invocations import (
    FAILED,
    NO_EVIDENCE,
    SUPPORTED,
    is_evidence_call,
    is_guidance_call,
)
from tools.evidence.record import EvidenceRecord
from tools.evidence.registry import kind_named
from tools.evidence.summary import clip
from tools.matching import query_groups

SUMMARY_CHARS = 1200
GAP_CHARS = 300


def tool_trace_summary_build(*, invocations: Iterable[ToolInvocation]) -> list[dict]:
    groups: dict[tuple, list[ToolInvocation]] = {}
    for invocation in sorted(invocations, key=lambda invocation: invocation.pk):
        if is_evidence_call(invocation.tool_name):
            groups.setdefault(_topic_key(invocation), []).append(invocation)
    return [_entry(f"trace-{number}", calls) for number, calls in enumerate(groups.values(), start=1)]


def _topic_key(invocation: ToolInvocation) -> tuple:
    """Same round, same tool, same topic: a kind may be one topic a round (alerts); a search's topic
    is the synonym groups its query names (any synonym of one group is one topic), else its text."""
    arguments = invocation.input if isinstance(invocation.input, dict) else {}
    kind = kind_named(invocation.tool_name)
    if kind is not None and kind.one_topic_a_round:
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
        ref.text
        for call, status in zip(calls, statuses, strict=True)
        if status == NO_EVIDENCE
        for ref in call.tool_result().refs
    ]
    if no_hits:
        gaps.append(clip(f"未命中 {len(no_hits)} 次: " + "; ".join(no_hits), GAP_CHARS))
    errors = [call.error or "未知错误" for call in calls if not call.success]
    if errors:
        gaps.append(clip(f"调用失败 {len(errors)} 次: " + "; ".join(dict.fromkeys(errors)), GAP_CHARS))
    budget = SUMMARY_CHARS - sum(len(gap) + 3 for gap in gaps)
    facts = _facts(tool_name, hits, budget) if hits else ""
    return " | ".join(part for part in (facts, *gaps) if part)


def _facts(tool_name: str, hits: list[ToolInvocation], budget: int) -> str:
    records = [record for call in hits for record in call.tool_result().records]
    kind = kind_named(tool_name)
    record_type = kind.record if kind is not None and kind.record is not None else EvidenceRecord
    return record_type.summary(records, budget=budget)
