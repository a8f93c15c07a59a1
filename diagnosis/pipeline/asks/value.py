"""`value`: what is X now — the current sample of the asked series (number, unit, the labels that
identify it, time, source), or the alert's own value when no Prometheus is there to ask."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.measured import measure_lines, measure_name, measure_window, same_series
from diagnosis.pipeline.asks.shared import (
    MAX_LISTED,
    Found,
    alert_found,
    decimal_of,
    failure,
    found_in,
    on_topic_found,
    past_threshold,
    results_of,
    series_found,
    series_queries,
    source_of,
    unfilled,
)
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import SERIES
from tools.evidence.result import ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.metric_query import Measure
from tools.numbers import number_text, places_text
from tools.promql import comparison_of


class Value(AskKind):
    name = "value"
    label = "当前值"
    words = "value"
    answers = frozenset({"quantity", "what"})
    series_subject = True

    def answers_of(self, ask: Ask) -> frozenset[str]:
        # Which of the up-gauges are down, and since when.
        if ask.quantity is not None and ask.quantity.computation == "down":
            return self.answers | {"which", "when"}
        return self.answers

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        if SERIES.tool not in world.tools:
            return []
        queries = series_queries(ask, alerts, world)
        # Numbers asked with the measure (what is used and the limit) are instants of their own.
        queries += [beside.query for beside in ask.quantity.beside] if ask.quantity is not None else []
        calls: list[Call] = [(SERIES.tool, {"query": query, "minutes": 0}) for query in queries]
        if ask.quantity is not None and ask.quantity.computation == "down":
            # Since when a series is down: its samples over the window.
            calls.append((SERIES.tool, {"query": ask.quantity.query, "minutes": ask.window.minutes}))
        return calls

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        if ask.quantity is not None:
            return _measured(ask, ask.quantity, results)
        if ask.unnamed and SERIES.tool in world.tools:
            # Words the catalog of the queried Prometheus has nothing for: said, never another metric.
            return unfilled(ask, ask.unnamed)
        slot = self._read(ask, results, world)
        if not slot.filled and ask.unnamed:
            return slot.model_copy(update={"why": f"{slot.why}；{ask.unnamed}"})
        return slot

    def _read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        series = series_found(ask, results, instant=True)
        if series is not None:
            found, result = series
            if not found:
                return failure(result, ask, f"查询 {result.request.query} 没有数据")
            alerts = alert_found(ask, results)[0]
            query = result.request.query
            lines = [
                _sample_text(f.record) + _against(f.record, alerts, query=query) for f in found[:MAX_LISTED]
            ]
            return Slot(
                ask=ask,
                filled=True,
                conclusion=f"{'；'.join(lines)}",
                source=source_of(result),
                bindings=[f.binding for f in found[:MAX_LISTED]],
            )
        # No Prometheus to ask: the alert's own current value, as its source records it; the value of a
        # topic is an alert of that topic's ("内存是多少" is not answered by a crash-loop count).
        alerts, result = alert_found(ask, results)
        valued = [
            f
            for f in on_topic_found(alerts, ask, world.vocabulary, or_all=False)
            if f.record.value not in (None, "")
        ]
        if not valued:
            return failure(
                result, ask, "没有可查询的指标序列（需要 Prometheus 数据源，或告警记录自带当前值）"
            )
        return Slot(
            ask=ask,
            filled=True,
            conclusion="；".join(
                f"{f.record.service} 的 {f.record.alert_name} 当前值 {number_text(str(f.record.value))}"
                + (f"（阈值 {f.record.threshold}）" if f.record.threshold else "")
                for f in valued[:MAX_LISTED]
            ),
            source=source_of(result),
            bindings=[f.binding for f in valued[:MAX_LISTED]],
        )


def _measured(ask: Ask, measure: Measure, results: Sequence[ToolResult]) -> Slot:
    """The value of the measure the catalog built: each series' number with its unit, on its subject's
    plain name."""
    series = series_found(ask, results, instant=True)
    if series is None:
        return unfilled(ask, f"没有执行查询 {measure.query}（需要 Prometheus 数据源）")
    found, result = series
    valued = [f for f in found if decimal_of(f.record.sample()[1]) is not None]
    if not valued:
        return failure(result, ask, f"查询 {measure.query} 没有数据")
    if measure.computation == "down":
        return _down(ask, measure, valued, result, results)
    besides = [(beside, _instants_of(beside, results)) for beside in measure.beside]
    lines = measure_lines(measure, valued, limit=MAX_LISTED, besides=besides)
    return Slot(
        ask=ask,
        filled=True,
        conclusion="；".join(lines) + measure_window(measure, valued[0].record),
        source=source_of(result),
        bindings=[
            *(f.binding for f in valued[:MAX_LISTED]),
            *(f.binding for _, found in besides for f in found[:MAX_LISTED]),
        ],
    )


def _down(
    ask: Ask,
    measure: Measure,
    valued: list[Found[SeriesRecord]],
    result: ToolResult,
    results: Sequence[ToolResult],
) -> Slot:
    """Which series of an up-gauge are 0 now, each since the first sample of its last run of zeros in
    the window (the window's start when all were 0); how many others are up."""
    records = [f.record for f in valued]
    down = [f for f in valued if decimal_of(f.record.sample()[1]) == 0]
    ranged = series_found(ask, results, instant=False)
    history = [f.record for f in ranged[0]] if ranged is not None else []
    if not down:
        text = f"{len(valued)} 个 {measure.metric} 序列都不为 0（都在正常状态）"
        cited = valued[:MAX_LISTED]
    else:
        lines = []
        for f in down[:MAX_LISTED]:
            name = measure_name(measure, f.record, records)
            lines.append(f"{name} 的 {measure.metric} 为 0（失败）{_zero_since(f.record, history, ask)}")
        others = len(valued) - len(down)
        text = "；".join(lines) + (f"；其余 {others} 个不为 0" if others else "")
        cited = down[:MAX_LISTED]
    return Slot(
        ask=ask,
        filled=True,
        conclusion=text + measure_window(measure, valued[0].record),
        source=source_of(result),
        bindings=[f.binding for f in cited],
    )


def _zero_since(record: SeriesRecord, history: Sequence[SeriesRecord], ask: Ask) -> str:
    """`，自 05:50:30 起`: the first sample of the series' last run of zeros over the window; at least
    since the window's first sample when every sample was 0; "" without its samples."""
    same = same_series(record, history)
    pairs = [(at, decimal_of(raw)) for at, raw in (same.values or [])] if same is not None else []
    if not pairs:
        return ""
    start = len(pairs)
    while start > 0 and pairs[start - 1][1] == 0:
        start -= 1
    if start == len(pairs):
        return ""
    at = f"{datetime.fromtimestamp(float(pairs[start][0])):%H:%M:%S}"
    if start == 0:
        return f"，{ask.window.label}内一直为 0（至少自 {at} 起）"
    return f"，自 {at} 起"


def _instants_of(measure: Measure, results: Sequence[ToolResult]) -> list[Found[SeriesRecord]]:
    """The valued series of a measure's own instant query."""
    return [
        f
        for r in results_of(results, SERIES, lambda a: a.get("query") == measure.query and not a.get("minutes"))
        for f in found_in(r, SERIES)
        if decimal_of(f.record.sample()[1]) is not None
    ]


def _against(record: SeriesRecord, alerts: list[Found[AlertRecord]], *, query: str) -> str:
    """A sample of an alert's own series (the query was that series), read against its threshold."""
    expr_series = {
        (c.series, f.record.alert_name): c
        for f in alerts
        if (c := comparison_of(f.record.expr or ""))
    }
    for (series, alert), comparison in expr_series.items():
        value = decimal_of(record.sample()[1])
        if value is not None and series == query:
            return f"，{alert} 阈值 {comparison.operator} {comparison.threshold_text}" + past_threshold(
                value, comparison.operator, comparison.threshold, stated=False
            )
    return ""


def _sample_text(record: SeriesRecord) -> str:
    name = record.name()
    at, raw = record.sample()
    when = f"，{datetime.fromtimestamp(float(at)):%H:%M:%S}" if at else ""
    return f"{name} 当前值 {number_text(str(raw))}{_unit(name, raw)}（采样时间{when.lstrip('，') or '未知'}）"


def _unit(name: str, raw: object) -> str:
    """The sample as an SRE reads it, by the metric's unit suffix; the raw number stays beside it."""
    number = decimal_of(raw)
    if number is None:
        return ""
    metric = name.split("{")[0]
    if metric.endswith("_bytes") and number >= 1024**2:
        return f" 字节（约 {_hundredths(number / 10**9)} GB / {_hundredths(number / 1024**3)} GiB）"
    if metric.endswith("_seconds"):
        return " 秒"
    if metric.endswith("_ratio"):
        return f"（{_hundredths(number * 100)}%）"
    return ""


def _hundredths(number: Decimal) -> str:
    return places_text(number, places=2)
