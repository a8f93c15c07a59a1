"""Planner stage: what to look at, how narrow the question is, what the user excluded."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from diagnosis.pipeline.scope import scope_parse


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="query_metrics / query_logs / lookup_knowledge")
    purpose: str


class PlannerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str
    steps: list[PlanStep]
    narrow_scope: bool = Field(description="the user asked to only confirm / only look at one thing")
    focus: list[str] = Field(description="services and alert names the question is about")
    excluded_topics: list[str] = Field(description="what the user said not to analyse")


# --- The rules engine's planner: reads the question with code (Chinese and English). ---

# Lookarounds instead of \b: Chinese characters count as word characters, so "确认order-service" has no \b.
SERVICE_PATTERN = re.compile(
    r"(?<![A-Za-z0-9-])[a-z][a-z0-9]*(?:-[a-z0-9]+)*-service(?![A-Za-z0-9-])", re.IGNORECASE
)
ALERT_PATTERN = re.compile(r"(?<![A-Za-z0-9])[A-Z][a-z]+(?:[A-Z][A-Za-z0-9]*)+(?![A-Za-z0-9])")

# Topic → the log query that finds it and the words a user types for it. The query words are chosen
# to hit the demo world's synonym groups (tools/data), so one topic maps to one log search.
TOPICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cpu": ("CPU", ("cpu", "处理器", "负载")),
    "memory": ("内存", ("内存", "memory", "heap", "堆", "jvm")),
    "gc": ("Full GC", ("gc", "垃圾回收")),
    "oom": ("OOM", ("oom", "outofmemory", "内存溢出", "oomkilled")),
    "slow": ("慢请求", ("慢", "slow", "响应", "latency", "延迟", "p99", "耗时")),
    "error": ("500", ("500", "error", "报错", "异常", "错误")),
    "connection_pool": ("连接池", ("hikari", "连接池", "connection pool", "active=50/50")),
    "slow_query": ("慢查询", ("慢查询", "slow query", "sql", "mysql")),
    "redis": ("Redis", ("redis",)),
    "mq": ("RabbitMQ", ("rabbitmq", "mq", "消息队列", "积压")),
    "disk": ("磁盘", ("磁盘", "disk", "/data")),
}
ALERT_TOPICS = {
    "HighCPUUsage": "cpu",
    "HighMemoryUsage": "memory",
    "SlowResponse": "slow",
    "HighDiskUsage": "disk",
    "ServiceUnavailable": "error",
}
# Topics whose evidence belongs with an alert besides its own (Full GC and OOM logs explain memory alerts).
RELATED_TOPICS = {"memory": ("gc", "oom"), "slow": ("error", "slow_query"), "cpu": ("gc",)}
GUIDANCE_WORDS = ("为什么", "原因", "怎么", "如何", "建议", "处理", "runbook", "why", "how", "cause", "fix")


def plan_by_rules(query: str) -> PlannerOutput:
    narrow, excluded = scope_parse(query)
    services, alerts, topics = question_subjects(query, excluded)

    asks_guidance = not narrow and any(word in query.lower() for word in GUIDANCE_WORDS)
    steps = []
    # A how-to question about nothing in the system ("如何轮换 … token") is for the runbooks alone.
    if services or alerts or topics or not asks_guidance:
        steps.append(PlanStep(tool="query_metrics", purpose="确认相关告警是否处于 firing 状态"))
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
    services = _unique(m.group(0).lower() for m in SERVICE_PATTERN.finditer(scoped_text))
    alerts = _unique(m.group(0) for m in ALERT_PATTERN.finditer(scoped_text) if m.group(0) in ALERT_TOPICS)
    topics = topics_in(scoped_text) or [ALERT_TOPICS[a] for a in alerts]
    return services, alerts, topics


def topics_in(text: str) -> list[str]:
    lowered = text.lower()
    return [topic for topic, (_, words) in TOPICS.items() if any(word in lowered for word in words)]


def _without_excluded(query: str, excluded: list[str]) -> str:
    for topic in excluded:
        query = query.replace(topic, " ")
    return query


def _unique(items) -> list[str]:
    return list(dict.fromkeys(items))
