"""`logs`: the lines that have the asked property (§17), grouped by template with counts and the
window; a plain logs ask about a service, its recent lines.

A logs ask may count lines by what their format says (§22, `measure`): slow lines (a duration above
a threshold) with the slowest, access lines by path ("404 多不多") or by status, error lines by class
("哪几类错误"). Its slot is then read from `count_logs` (counted over the whole window, or a stated
sample); slow lines keep their search beside it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal

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
from diagnosis.pipeline.focus import QuestionFocus
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.logs.record import LogCount, LogLine
from tools.evidence.registry import LOG_COUNTS, LOGS
from tools.evidence.result import ToolResult
from tools.logcounts import CountRequest
from tools.logformats import unit_ms
from tools.loglines import Pattern, has_property, patterns_mined
from tools.numbers import places_text
from tools.terms import query_terms, term_pattern
from tools.vocabulary import Vocabulary

MAX_PATTERNS = 3
# The groups of a count a conclusion lists (the total counts them all).
MAX_GROUPS_LISTED = 8
SLOW_TOPICS = ("slow", "slow_query")
# "超过 2 秒", "over 500ms", "> 1s": the duration the question calls slow.
THRESHOLD = re.compile(
    r"(?:超过|大于|高于|多于|长于|>=?|\bover|\babove|\bexceeding|\blonger than|\bslower than|\bmore than)\s*"
    r"(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|min|minutes?|毫秒|秒|分钟)(?![A-Za-z])",
    re.IGNORECASE,
)
# An HTTP status (`404`, `404s`) or class (`5xx`) standing alone, not a number with a unit (`500 ms`).
STATUS_CODE = re.compile(
    r"(?<![A-Za-z0-9_.:/-])([2-5](?:[0-9]{2}|[xX]{2}))s?(?![A-Za-z0-9_.:/%-])"
    r"(?!\s*(?:ms|s\b|secs?|seconds?|min|毫秒|秒|分钟|条|次|个|%))"
)


class Logs(AskKind):
    name = "logs"
    label = "日志"
    words = "logs"
    answers = frozenset({"quantity", "which", "what", "whether"})
    alert_subject = False

    def alerts_first(self, ask: Ask) -> bool:
        return False

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        """A count of lines by path, status or class is the count alone; slow lines keep their search
        beside it (lines that say slow without a duration); any other ask, the search."""
        if ask.measure and ask.measure != "slow":
            return [count_call(ask)]
        searched = log_search(ask, alerts=alerts, world=world)
        return [*searched, count_call(ask)] if ask.measure else searched

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        """A count is answered from its counts; a plain logs ask about a service with its recent lines;
        one without a service, and a topic's, with the lines that have the asked property."""
        counted = count_slot(ask, results, world) if ask.measure else None
        return counted or log_slot(ask, results, world, wanted=ask.topic or ("" if ask.service else "error"))


# --- Reading a count from the question --------------------------------------------------------------


def measure_in(text: str, *, focus: QuestionFocus, vocabulary: Vocabulary, logs_asked: bool) -> dict | None:
    """The count a question asks of log lines (`measure`, `status`, `threshold_ms` of its logs ask), or
    None: error lines by class ("哪几类错误"), access lines by path for a status ("404 多不多", "404s by
    path") or by status ("状态码分布"), slow lines ("慢查询有几条", "最慢的请求", "超过 2 秒的请求")."""
    lowered = text.lower()
    words = vocabulary.log_measures

    def says(terms: list[str]) -> bool:
        return any(term_pattern(term).search(lowered) for term in terms)

    # A ratio or a rate ("5xx 占比", "404 per second") is the metrics' to answer, not a count of lines.
    if says(words.ratio):
        return None
    threshold = THRESHOLD.search(text)
    without_threshold = text[: threshold.start()] + text[threshold.end() :] if threshold else text
    statuses = [code.lower() for code in STATUS_CODE.findall(without_threshold)]
    if says(words.kinds) and ("error" in focus.topics or logs_asked):
        return {"measure": "class", "topic": "error" if "error" in focus.topics else _first(focus.topics)}
    if says(words.status) and not statuses:
        return {"measure": "status"}
    if statuses and (logs_asked or says(words.path) or says(words.count)):
        return {"measure": "path", "status": statuses[0]}
    # Slow lines are asked when a slow topic the question keeps in focus says so: words for slow lines
    # in what it excludes ("不要分析数据库慢查询") ask nothing.
    phrases = [match[0] for term in words.slow_lines for match in term_pattern(term).finditer(lowered)]
    named = {group for phrase in phrases for group, _ in query_terms(phrase, vocabulary=vocabulary)}
    slow_topics = [topic for topic in focus.topics if topic in SLOW_TOPICS or topic in named]
    # A duration the question calls too long asks for the lines over it ("超过 2 秒的请求有几条",
    # "which took longer than 500 ms, and which was the slowest").
    over_threshold = threshold is not None and (logs_asked or says(words.count) or says(words.slowest))
    if (slow_topics and (phrases or logs_asked or says(words.slowest) or threshold)) or over_threshold:
        milliseconds = int(unit_ms(threshold[1], threshold[2])) if threshold else None
        return {"measure": "slow", "threshold_ms": milliseconds, "topic": _first(slow_topics)}
    return None


def share_in(text: str, *, vocabulary: Vocabulary) -> dict | None:
    """The share of a status (class) among the access lines a ratio asks ("nginx 5xx 占比", "what share
    of requests are 5xx"), counted by status: asked of the logs when no metric has the status."""
    lowered = text.lower()
    statuses = [code.lower() for code in STATUS_CODE.findall(text)]
    if not statuses or not any(term_pattern(term).search(lowered) for term in vocabulary.log_measures.ratio):
        return None
    return {"measure": "status", "share": statuses[0]}


def _first(topics: Sequence[str]) -> str:
    return next(iter(topics), "")


# --- The count's call and slot ----------------------------------------------------------------------


def count_call(ask: Ask) -> Call:
    """The count the ask needs, on its service, over the window it names."""
    arguments: dict = {"measure": ask.measure}
    if ask.service:
        arguments["service"] = ask.service
    if ask.status:
        arguments["status"] = ask.status
    if ask.threshold_ms:
        arguments["slower_than_ms"] = ask.threshold_ms
    if ask.window.asked:
        arguments["minutes"] = ask.window.minutes
    return LOG_COUNTS.tool, arguments


def count_slot(ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot | None:
    """The slot of a count, from the ask's `count_logs` call: the total (how it was counted), then the
    slowest or the groups, each number cited from the count that holds it. None when no count was made,
    or no slow line was counted (the lines' search may still find lines that say slow)."""
    wanted = count_call(ask)[1]
    result = next(iter(results_of(results, LOG_COUNTS, lambda arguments: arguments == wanted)), None)
    if result is None:
        return None
    if not result.success:
        return failure(result, ask, "未能统计日志")
    counts: list[Found[LogCount]] = found_in(result, LOG_COUNTS)
    window = f"最近 {counts[0].record.minutes if counts else world.logs_window_minutes} 分钟"
    about = ask.service or "所有服务"
    limits = _logs_limits(ask, world)
    if not counts:
        if ask.measure == "slow":
            return None
        nothing = no_hit(result)
        return Slot(
            ask=ask,
            filled=nothing is not None,
            conclusion=f"{window}未检索到 {_counted(ask, about)}",
            source=source_of(result),
            limits=limits,
            bindings=[nothing] if nothing else [],
        )
    total, groups = counts[0], counts[1:]
    how = _how(total.record)
    if ask.measure == "slow":
        record = total.record
        label = world.vocabulary.label(ask.topic) if ask.topic in SLOW_TOPICS else "慢"
        conclusion = (
            f"{window} {about} 耗时超过 {record.slower_than_ms} ms 的{label}日志 {record.count} 条（{how}），"
            f"最慢 {record.slowest_ms} ms：「{quotable(record.line)}」"
        )
        bindings = [total.binding]
    else:
        listed = groups[:MAX_GROUPS_LISTED]
        by = {"path": "按路径", "status": "按状态码", "class": "按类别"}[ask.measure]
        named = "、".join(f"「{quotable(_group_name(g.record))}」{g.record.count} 条" for g in listed)
        rest = total.record.count - sum(g.record.count for g in listed)
        more = f"，其余 {rest} 条" if rest > 0 else ""
        conclusion = f"{window} {_counted(ask, about)} {total.record.count} 条（{how}），{by}：{named}{more}"
        bindings = [total.binding, *(g.binding for g in listed)]
        if ask.share:
            conclusion += _share(ask.share, total.record, groups)
    return Slot(
        ask=ask, filled=True, conclusion=conclusion, source=source_of(result), limits=limits, bindings=bindings
    )


def _share(share: str, total: LogCount, groups: Sequence[Found[LogCount]]) -> str:
    """`；其中 5xx 共 270 条，占 27.00%`: the lines of the status (class) among every line counted."""
    request = CountRequest(measure="status", minutes=total.minutes, status=share)
    lines = sum(g.record.count for g in groups if request.wants_status(_group_name(g.record)))
    if not total.count:
        return ""
    percent = places_text(Decimal(lines) * 100 / Decimal(total.count), places=2)
    return f"；其中 {share} 共 {lines} 条，占 {percent}%"


def _counted(ask: Ask, about: str) -> str:
    """The lines a count is of: `checkout 的错误日志`, `checkout 状态码 404 的访问日志`."""
    if ask.measure == "class":
        return f"{about} 的错误日志"
    if ask.measure == "slow":
        return f"{about} 的慢日志"
    return f"{about} 状态码 {ask.status} 的访问日志" if ask.status else f"{about} 的访问日志"


def _group_name(record: LogCount) -> str:
    return next(iter(record.group.values()), "")


def _how(record: LogCount) -> str:
    """How a count was made, as the conclusion says it."""
    if record.counted_over.startswith("sample:"):
        lines = record.counted_over.partition(":")[2]
        return f"LogQL 统计整个窗口，另按最新 {lines} 条日志统计" if record.query else f"按最新 {lines} 条日志统计"
    return "LogQL 统计整个窗口" if record.query else "窗口内全部日志"


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
        return failure(result, ask, world.unconfigured(LOGS) or "未能检索日志")
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
