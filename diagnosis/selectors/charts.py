"""Small server-rendered SVG charts of range-query evidence (`query_promql` with `minutes` > 0).

A chart draws the one series a binding cites, marks the points whose values the excerpt quotes, and
the alert threshold when one is known: the comparison in the query itself (`expr > 0.8`), else the
comparison of a session alert's `expr` whose left side is the query. No script, no CDN: the SVG is
built here from numbers and escaped text only, and styled by presentation attributes (no inline
style), so it is safe under the strict CSP and looks the same on the chat page, the admin and the report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import record_at, record_path_parts
from tools.clock import local_text
from tools.numbers import number_text, series_name

RANGE_TOOL = "query_promql"
SERIES_KEY = "series"
# `<left> <op> <number>` at the top level of an expr (`… > 0.8`, `… >= bool 90`); anything else: no threshold.
COMPARISON = re.compile(
    r"^(?P<left>.+?)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?:bool\s+)?(?P<number>-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*$",
    re.I,
)
NUMBER_TOKEN = re.compile(r"-?\d+(?:\.\d+)?")
WIDTH, HEIGHT = 320, 120
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 10, 10, 22


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

    @property
    def svg(self) -> SafeString:
        return chart_svg(self)


def threshold_of(expr: str) -> tuple[str, Threshold] | None:
    """The comparison of an expr as (left side, threshold), or None when it has none we can read."""
    match = COMPARISON.match(" ".join((expr or "").split()))
    if not match or _open_brackets(match.group("left")):
        return None
    return match.group("left").strip(), Threshold(op=match.group("op"), value=float(match.group("number")))


def _open_brackets(text: str) -> bool:
    """A comparison inside brackets or braces is not the expr's own (`sum(x > 1)`, `{a!="b"}`)."""
    return any(text.count(left) != text.count(right) for left, right in ("()", "{}", "[]"))


def _alert_thresholds(invocations: Iterable[ToolInvocation]) -> dict[str, Threshold]:
    """Each session alert's expr left side → its threshold."""
    found: dict[str, Threshold] = {}
    for invocation in invocations:
        for alert in (invocation.output or {}).get("alerts") or []:
            parsed = threshold_of(alert.get("expr") or "") if isinstance(alert, dict) else None
            if parsed:
                found.setdefault(" ".join(parsed[0].split()), parsed[1])
    return found


def is_range_invocation(invocation: ToolInvocation | None) -> bool:
    return (
        invocation is not None
        and invocation.tool_name == RANGE_TOOL
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
    query = " ".join(str((invocation.input or {}).get("query") or "").split())
    own = threshold_of(query)
    threshold = own[1] if own else _alert_thresholds(session_invocations).get(query)
    return SeriesChart(
        name=series_name(record.get("metric") or {}), points=points, cited=cited, threshold=threshold
    )


def _point(pair) -> tuple[float, float] | None:
    try:
        timestamp, value = float(pair[0]), float(pair[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (timestamp, value) if math.isfinite(value) else None


def chart_svg(chart: SeriesChart) -> SafeString:
    times = [t for t, _ in chart.points]
    values = [v for _, v in chart.points]
    if chart.threshold is not None:
        values.append(chart.threshold.value)
    low, high = min(values), max(values)
    if high == low:
        low, high = low - 1, high + 1
    t0, t1 = min(times), max(times)
    span = (t1 - t0) or 1.0
    inner_w, inner_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(t: float) -> float:
        return PAD_LEFT + (t - t0) / span * inner_w

    def y(v: float) -> float:
        return PAD_TOP + (high - v) / (high - low) * inner_h

    line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in chart.points)
    parts = [
        f'<svg class="series-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(chart.name)}">',
        f"<title>{escape(chart.name)}</title>",
        f'<rect x="{PAD_LEFT}" y="{PAD_TOP}" width="{inner_w}" height="{inner_h}" class="chart-frame" fill="none" stroke="#dde1e8"/>',
        f'<text x="{PAD_LEFT - 4}" y="{PAD_TOP + 8}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(number_text(repr(high)))}</text>',
        f'<text x="{PAD_LEFT - 4}" y="{PAD_TOP + inner_h}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(number_text(repr(low)))}</text>',
        f'<text x="{PAD_LEFT}" y="{HEIGHT - 6}" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(t0))}</text>',
        f'<text x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 6}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(t1))}</text>',
    ]
    if chart.threshold is not None:
        level = y(chart.threshold.value)
        label = f"阈值 {chart.threshold.op} {number_text(repr(chart.threshold.value))}"
        parts += [
            f'<line x1="{PAD_LEFT}" y1="{level:.1f}" x2="{WIDTH - PAD_RIGHT}" y2="{level:.1f}" class="chart-threshold" stroke="#b42318" stroke-dasharray="4 3"/>',
            f'<text x="{WIDTH - PAD_RIGHT - 2}" y="{level - 3:.1f}" text-anchor="end" class="chart-threshold-label" fill="#b42318" font-size="9">{escape(label)}</text>',
        ]
    parts.append(
        f'<polyline points="{line}" class="chart-line" fill="none" stroke="#2f5bd3" stroke-width="1.6"/>'
    )
    parts += [
        f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3.5" class="chart-cited" fill="#8a5a00" stroke="#fff" stroke-width="1"><title>{escape(_clock(t))} {escape(number_text(repr(v)))}</title></circle>'
        for t, v in chart.cited
    ]
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every interpolated text is escaped above


def _clock(timestamp: float) -> str:
    return local_text(datetime.fromtimestamp(timestamp).astimezone())[11:16]
