"""The series a range-query citation (`query_promql` with `minutes` > 0) draws: the one series the
binding cites, the points whose values the excerpt quotes, and the alert threshold when one is known:
the comparison in the query itself (`expr > 0.8`), else the comparison of a session alert's `expr`
whose series side is the query. Both are read by the PromQL parser (`tools.promql`), so a chart and
an alert's conclusion never read two thresholds from one expr. `diagnosis.presenters.charts` draws it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import record_at, record_path_parts
from tools.evidence.registry import SERIES
from tools.numbers import number_text, series_name
from tools.promql import comparison_of, printed

SERIES_KEY = "series"
NUMBER_TOKEN = re.compile(r"-?\d+(?:\.\d+)?")


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


def _alert_thresholds(invocations: Iterable[ToolInvocation]) -> dict[str, Threshold]:
    """Each session alert's expr series side (as printed) → its threshold."""
    found: dict[str, Threshold] = {}
    for invocation in invocations:
        for alert in (invocation.output or {}).get("alerts") or []:
            parsed = threshold_of(alert.get("expr") or "") if isinstance(alert, dict) else None
            if parsed:
                found.setdefault(parsed[0], parsed[1])
    return found


def is_range_invocation(invocation: ToolInvocation | None) -> bool:
    return (
        invocation is not None
        and SERIES.owns(invocation.tool_name)
        and invocation.success
        and int((invocation.input or {}).get("minutes") or 0) > 0
    )


def series_chart(
    *, invocation: ToolInvocation, raw_path: str, excerpt: str, session_invocations: Iterable[ToolInvocation]
) -> SeriesChart | None:
    """The chart of the cited series of a range query; None for anything else or too few points."""
    parts = record_path_parts(raw_path)
    if parts is None or parts[0] != SERIES_KEY or not is_range_invocation(invocation):
        return None
    record = record_at(invocation.output, raw_path)
    if record is None:
        return None
    points = [point for pair in record.get("values") or [] if (point := _point(pair)) is not None]
    if len(points) < 2:
        return None
    quoted = set(NUMBER_TOKEN.findall(excerpt or ""))
    cited = [(t, v) for t, v in points if number_text(repr(v)) in quoted]
    query = str((invocation.input or {}).get("query") or "")
    own = threshold_of(query)
    threshold = own[1] if own else _alert_thresholds(session_invocations).get(printed(query) or "")
    return SeriesChart(
        name=series_name(record.get("metric") or {}), points=points, cited=cited, threshold=threshold
    )


def _point(pair) -> tuple[float, float] | None:
    try:
        timestamp, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (timestamp, value) if math.isfinite(value) else None
