"""`logs`: the lines that have the asked property (§17), grouped by template with counts and the
window; a plain logs ask about a service, its recent lines."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.shared import (
    Found,
    failure,
    found_in,
    minutes_text,
    no_hit,
    quotable,
    results_of,
    source_of,
)
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import LOGS
from tools.evidence.result import ToolResult
from tools.loglines import Pattern, has_property, patterns_mined
from tools.vocabulary import Vocabulary

MAX_PATTERNS = 3


class Logs(AskKind):
    name = "logs"
    label = "日志"
    words = "logs"
    alert_subject = False

    def alerts_first(self, ask: Ask) -> bool:
        return False

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        return log_search(ask, alerts=alerts, world=world)

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        """A plain logs ask about a service is answered with its recent lines; one without a service, and
        a topic's, with the lines that have the asked property."""
        return log_slot(ask, results, world, wanted=ask.topic or ("" if ask.service else "error"))


def log_search(ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
    """The search of the ask's topic (else its service's recent lines, else errors) on its service, or
    on the service of its alerts."""
    service = ask.service or next((a.service for a in alerts if a.service), "")
    if ask.topic:
        term = world.vocabulary.canonical_term(ask.topic)
    else:
        # A plain logs ask about a service wants its recent lines: searched by its name alone.
        term = service if ask.kind == "logs" and ask.service else "error"
    return [(LOGS.tool, {"query": term} | ({"service": service} if service else {}))]


def log_slot(ask: Ask, results: Sequence[ToolResult], world: SlotWorld, *, wanted: str) -> Slot:
    """The lines served that have the `wanted` property (all of them for ""), grouped by template: each
    pattern's count, first and last time, and its newest line as the evidence ref."""
    # Searches on the ask's service (or on none): another service's lines are never this one's.
    searches = results_of(results, LOGS, lambda arguments: _on_service(ask, arguments.get("service")))
    # The first search whose lines have the property (a cause ask runs several), else the first search.
    result = next(
        (
            r
            for r in searches
            if r.success
            and any(not wanted or _has(wanted, f.record, world.vocabulary) for f in _lines_served(r, ask))
        ),
        next(iter(searches), None),
    )
    if result is None or not result.success:
        return failure(result, ask, "未能检索日志")
    window = f"最近 {world.logs_window_minutes} 分钟"
    about = ask.service or "所有服务"
    label = world.vocabulary.label(wanted) if wanted else ""
    found = _lines_served(result, ask)
    limits = _logs_limits(ask, world)
    if not found:
        nothing = no_hit(result)
        return Slot(
            ask=ask,
            filled=nothing is not None,
            conclusion=f"{window}未检索到 {about} 的{label}日志",
            source=source_of(result),
            limits=limits,
            bindings=[nothing] if nothing else [],
        )
    kept = [f for f in found if not wanted or _has(wanted, f.record, world.vocabulary)]
    if not kept:
        levels = "、".join(sorted({(f.record.level or "未知").upper() for f in found}))
        below = "，均低于 ERROR" if wanted == "error" else f"，其中{label}日志 0 条"
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{window} {about} 匹配的 {len(found)} 条日志级别为 {levels}{below}",
            source=source_of(result),
            limits=limits,
            bindings=[f.binding for f in found[:MAX_PATTERNS]],
        )
    patterns = patterns_mined([f.record.message for f in kept])
    top = patterns[:MAX_PATTERNS]
    listed = "；".join(f"「{quotable(p.template)}」{p.count} 条{_span(p, kept)}" for p in top)
    total = result.total
    # Counted over the lines served; a source that matched more says so rather than implying all.
    counted = f"检索命中 {total} 条" + (f"，按最新 {len(found)} 条统计" if total > len(found) else "")
    return Slot(
        ask=ask,
        filled=True,
        conclusion=(
            f"{window} {about} 的{label}日志 {len(kept)} 条（{counted}），{len(patterns)} 种模式：{listed}"
        ),
        source=source_of(result),
        limits=limits,
        # Lines come newest first: a pattern's first member is its newest line.
        bindings=[kept[p.members[0]].binding for p in top],
    )


def _lines_served(result: ToolResult, ask: Ask) -> list[Found[LogLine]]:
    """Every line of the ask's service the call served, each with the ref that cites it."""
    return [line for line in found_in(result, LOGS) if _on_service(ask, line.record.service)]


def _on_service(ask: Ask, service: str | None) -> bool:
    """Whether a search or a line with this service can be the ask's: its own service, or none said."""
    return not ask.service or service in (None, "", ask.service)


def _has(topic: str, record: LogLine, vocabulary: Vocabulary) -> bool:
    return has_property(topic, level=record.level, message=record.message, vocabulary=vocabulary)


def _span(pattern: Pattern, kept: list[Found[LogLine]]) -> str:
    """When a pattern's lines were written: `（10:01:02–10:15:40）` for more than one line."""
    times = [kept[i].record.timestamp for i in pattern.members]
    if pattern.count < 2 or not all(times):
        return ""
    return f"（{min(times)[-8:]}–{max(times)[-8:]}）"


def _logs_limits(ask: Ask, world: SlotWorld) -> list[str]:
    if ask.window.asked and ask.window.minutes + ask.window.end_minutes_ago > world.logs_window_minutes:
        return [f"日志只能看到最近 {minutes_text(world.logs_window_minutes)}"]
    return []
