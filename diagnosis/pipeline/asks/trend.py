"""`trend`: how X went over the window — a range query: first, last, min and max (and a chart)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.measured import measure_name
from diagnosis.pipeline.asks.shared import (
    MAX_LISTED,
    MAX_RANGE_MINUTES,
    decimal_of,
    failure,
    number_said,
    retention_limits,
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


class Trend(AskKind):
    name = "trend"
    label = "趋势"
    words = "trend"
    answers = frozenset({"quantity", "what"})
    series_subject = True

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        if SERIES.tool not in world.tools:
            return []
        minutes = min(MAX_RANGE_MINUTES, ask.window.minutes + ask.window.end_minutes_ago)
        return [
            (SERIES.tool, {"query": query, "minutes": minutes})
            for query in series_queries(ask, alerts, world)
        ]

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        if ask.quantity is None and ask.unnamed and SERIES.tool in world.tools:
            # Words the catalog of the queried Prometheus has nothing for: said, never another metric.
            return unfilled(ask, ask.unnamed)
        series = series_found(ask, results, instant=False)
        if series is None:
            why = "趋势需要 Prometheus 数据源（未配置），或没有可查询的指标序列"
            return unfilled(ask, f"{why}；{ask.unnamed}" if ask.unnamed else why)
        found, result = series
        ranged = [f for f in found if _numbers(f.record)]
        if not ranged:
            return failure(
                result, ask, f"{ask.window.label}内查询 {result.request.query} 没有数据"
            )
        lines = []
        measure = ask.quantity
        for f in ranged[:MAX_LISTED]:
            numbers = _numbers(f.record)
            if measure is not None:
                said = measure.said
                name = f"{measure_name(measure, f.record, [r.record for r in ranged])} 的 {measure.label}"
            else:
                said, name = number_said, f.record.name()
            lines.append(
                f"{name} {ask.window.label}：起 {said(numbers[0])}，末 {said(numbers[-1])}，"
                f"最小 {said(min(numbers))}，最大 {said(max(numbers))}（{len(numbers)} 个采样）"
            )
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{'；'.join(lines)}",
            source=source_of(result),
            limits=retention_limits(ask, result),
            bindings=[f.binding for f in ranged[:MAX_LISTED]],
        )


def _numbers(record: SeriesRecord) -> list[Decimal]:
    return [n for _, raw in record.values or [] if (n := decimal_of(raw)) is not None]
