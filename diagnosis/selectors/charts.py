"""The series a range-query citation (`query_promql` with `minutes` > 0) draws: the one series the
binding cites, the points whose values its ref names (latest, lowest, highest), and the alert threshold when one is known:
the comparison in the query itself (`expr > 0.8`), else the comparison of a session alert's `expr`
whose series side is the query. Both are read by the PromQL parser (`tools.promql`), so a chart and
an alert's conclusion never read two thresholds from one expr. `diagnosis.presenters.charts` draws it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import SERIES
from tools.evidence.result import ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.numbers import finite_number
from tools.promql import comparison_of, printed


@dataclass(frozen=True)
class Threshold:
    op: str
    value: float


@dataclass(frozen=True)
class SeriesChart:
    name: str
    points: list[tuple[float, float]]
    cited: list[tuple[float, float]]
    threshold: Threshold | None


def threshold_of(expr: str) -> tuple[str, Threshold] | None:
    """The expr's own comparison with a number as (its series side as printed, threshold), or None
    when it has none (a comparison inside a function is not the expr's own: `sum(x > 1)`)."""
    comparison = comparison_of(expr or "")
    if comparison is None:
        return None
    value = float(comparison.threshold)
    # `> 1e400` is past a float: no level to draw a line at.
    if not math.isfinite(value):
        return None
    return comparison.series, Threshold(op=comparison.operator, value=value)


def _alert_thresholds(results: Iterable[ToolResult]) -> dict[str, Threshold]:
    """Each session alert's expr series side (as printed) → its threshold."""
    found: dict[str, Threshold] = {}
    for result in results:
        for alert in result.records:
            parsed = threshold_of(alert.expr) if isinstance(alert, AlertRecord) else None
            if parsed:
                found.setdefault(parsed[0], parsed[1])
    return found


def is_range_result(result: ToolResult | None) -> bool:
    return (
        result is not None
        and SERIES.owns(result.tool_name)
        and result.success
        and (result.request.minutes or 0) > 0
    )


def series_chart(
    *, result: ToolResult, raw_path: str, session_results: Iterable[ToolResult]
) -> SeriesChart | None:
    """The chart of the cited series of a range query; None for anything else or too few points. The
    cited points are those whose values the series' ref text names (its latest, lowest and highest)."""
    record = result.record_at(raw_path) if is_range_result(result) else None
    if not isinstance(record, SeriesRecord):
        return None
    named = record.named_values()
    points, cited = [], []
    for pair in record.values or []:
        point = _point(pair)
        if point is not None:
            points.append(point)
            if finite_number(pair[1]) in named:
                cited.append(point)
    if len(points) < 2:
        return None
    query = result.request.query
    own = threshold_of(query)
    threshold = own[1] if own else _alert_thresholds(session_results).get(printed(query) or "")
    return SeriesChart(name=record.name(), points=points, cited=cited, threshold=threshold)


def _point(pair) -> tuple[float, float] | None:
    try:
        timestamp, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (timestamp, value) if math.isfinite(value) else None
