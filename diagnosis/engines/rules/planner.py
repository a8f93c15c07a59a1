"""The rules engine's planner: what to look at, how narrow the question is, what the user excluded."""

from __future__ import annotations

import re

from diagnosis.pipeline.contracts import PlannerOutput, PlanStep
from diagnosis.pipeline.scope import scope_parse
from tools.matching import query_terms, services_aliased

# The question is read with code (Chinese and English).
# Lookarounds instead of \b: Chinese characters count as word characters, so "确认order-service" has no \b.
SERVICE_PATTERN = re.compile(
    r"(?<![A-Za-z0-9-])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-service(?![A-Za-z0-9-])", re.IGNORECASE
)
ALERT_PATTERN = re.compile(r"(?<![A-Za-z0-9])[A-Z][a-z]+(?:[A-Z][A-Za-z0-9]*)+(?![A-Za-z0-9])")

ALERT_TOPICS = {
    "HighCPUUsage": "cpu",
    "HighMemoryUsage": "memory",
    "SlowResponse": "slow",
    "HighDiskUsage": "disk",
    "ServiceUnavailable": "availability",
}
# Topics whose evidence belongs with an alert besides its own (Full GC and OOM logs explain memory alerts).
RELATED_TOPICS = {
    "memory": ("gc", "oom"),
    "slow": ("error", "slow_query", "timeout"),
    "cpu": ("gc",),
    "availability": ("oom", "error"),
}
ALERTS_ONLY = re.compile(r"告警|alerts?\b|firing", re.IGNORECASE)
GUIDANCE_WORDS = ("为什么", "原因", "怎么", "如何", "建议", "处理", "runbook", "why", "how", "cause", "fix")


def plan_by_rules(query: str) -> PlannerOutput:
    narrow, excluded = scope_parse(query)
    services, alerts, topics = question_subjects(query, excluded)

    asks_guidance = not narrow and any(word in query.lower() for word in GUIDANCE_WORDS)
    steps = []
    # A how-to question about nothing in the system ("如何轮换 … token") is for the runbooks alone.
    if services or alerts or topics or not asks_guidance:
        steps.append(PlanStep(tool="query_metrics", purpose="确认相关告警是否处于 firing 状态"))
        # "有哪些告警" asks about alerts only; logs answer questions about a topic or a problem.
        if topics or not ALERTS_ONLY.search(query):
            steps.append(PlanStep(tool="query_logs", purpose="检索与问题相关的日志记录"))
    if asks_guidance:
        steps.append(PlanStep(tool="lookup_knowledge", purpose="查找处理手册作为排查参考（非当前事实）"))
    return PlannerOutput(
        goal=query.strip(),
        steps=steps,
        narrow_scope=narrow,
        focus=services + alerts,
        excluded_topics=excluded,
    )


def question_subjects(query: str, excluded: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Services, alert names and topics the question asks about, leaving out what the user excluded."""
    scoped_text = _without_excluded(query, excluded)
    named = [m.group(0).lower() for m in SERVICE_PATTERN.finditer(scoped_text)]
    services = _unique([*named, *services_aliased(scoped_text)])
    alerts = _unique(m.group(0) for m in ALERT_PATTERN.finditer(scoped_text) if m.group(0) in ALERT_TOPICS)
    topics = topics_in(scoped_text) or [ALERT_TOPICS[a] for a in alerts]
    return services, alerts, topics


def topics_in(text: str) -> list[str]:
    """The synonym groups (tools/data/synonyms.json) the text is about, in the order it names them."""
    terms = sorted(query_terms(text), key=lambda term: term[1][0])
    return list(dict.fromkeys(group for group, _ in terms))


def _without_excluded(query: str, excluded: list[str]) -> str:
    for topic in excluded:
        query = query.replace(topic, " ")
    return query


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))
