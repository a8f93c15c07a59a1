"""The rules engine's planner: what to look at, how narrow the question is, what the user excluded."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.action import only_actions
from diagnosis.pipeline.contracts import PlannerOutput, PlanStep
from diagnosis.pipeline.focus import QuestionFocus
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS


def plan_by_rules(
    query: str,
    *,
    focus: QuestionFocus,
    narrow: bool,
    excluded: Sequence[str],
    asks: Sequence[Ask] = (),
) -> PlannerOutput:
    """`focus`: what the question names and asks, read by code against the inventory (the round's);
    `narrow`, `excluded`: its scope (`scope_parse`); `asks`: what it asks, each with its slot."""
    services = [*focus.services, *focus.unknown_services]
    alerts = [*focus.alerts, *focus.unknown_alerts]
    topics = list(focus.topics)

    asks_guidance = not narrow and focus.asks_guidance
    steps = []
    if only_actions(asks):
        return PlannerOutput(
            goal=query.strip(),
            steps=[],
            narrow_scope=True,
            focus=services + alerts,
            excluded_topics=list(excluded),
        )
    # A question nothing of which is understood has nothing to search for; a how-to
    # question about nothing in the system ("如何轮换 … token") is for the runbooks alone.
    # A quantity the catalog built, asked of no subject or topic ("哪个拨测挂了"), is its query's to
    # answer: every firing alert and every error line are not about it.
    measured_only = (
        bool(asks) and all(ask.quantity is not None for ask in asks) and not (services or alerts or topics)
    )
    if focus.understood and not measured_only and (services or alerts or topics or not asks_guidance):
        steps.append(PlanStep(tool=ALERTS.tool, purpose="确认相关告警是否处于 firing 状态"))
        # "有哪些告警" asks about alerts only; logs answer questions about a topic or a problem.
        if (topics or not focus.lists_alerts) and not _counted_only(asks):
            steps.append(PlanStep(tool=LOGS.tool, purpose="检索与问题相关的日志记录"))
    if asks_guidance:
        steps.append(PlanStep(tool=KNOWLEDGE.tool, purpose="查找处理手册作为排查参考（非当前事实）"))
    return PlannerOutput(
        goal=query.strip(),
        steps=steps,
        narrow_scope=narrow,
        focus=services + alerts,
        excluded_topics=list(excluded),
    )


def _counted_only(asks: Sequence[Ask]) -> bool:
    """Every ask is a count of log lines by path, status or class ("404 多不多", "哪几类错误"): the count
    answers it over the whole window, and the newest lines a search would add are another sample, not
    the answer (slow lines keep their search: a line may say slow without a duration)."""
    return bool(asks) and all(ask.kind == "logs" and ask.measure in ("path", "status", "class") for ask in asks)
