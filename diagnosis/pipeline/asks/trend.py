"""`trend`: how X went over the window — a range query: first, last, min and max (and a chart)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
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
        series = series_found(ask, results, instant=False)
        if series is None:
            return unfilled(ask, "趋势需要 Prometheus 数据源（未配置），或没有可查询的指标序列")
        found, result = series
        ranged = [f for f in found if _numbers(f.record)]
        if not ranged:
            return failure(
                result, ask, f"{ask.window.label}内查询 {result.request.query} 没有数据"
            )
        lines = []
        for f in ranged[:MAX_LISTED]:
            numbers = _numbers(f.record)
            lines.append(
                f"{f.record.name()} {ask.window.label}：起 {number_said(numbers[0])}，末 {number_said(numbers[-1])}，"
                f"最小 {number_said(min(numbers))}，最大 {number_said(max(numbers))}（{len(numbers)} 个采样）"
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
