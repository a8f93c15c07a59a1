"""The series a range-query citation (`query_promql` with `minutes` > 0) draws: the one series the
binding cites, the points whose values the excerpt quotes, and the alert threshold when one is known:
the comparison in the query itself (`expr > 0.8`), else the comparison of a session alert's `expr`
whose left side is the query. `diagnosis.presenters.charts` draws it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import record_at, record_path_parts
from tools.evidence_kinds import SERIES
from tools.numbers import number_text, series_name

SERIES_KEY = "series"
# `<left> <op> <number>` at the top level of an expr (`… > 0.8`, `… >= bool 90`); anything else: no threshold.
COMPARISON = re.compile(
    r"^(?P<left>.+?)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?:bool\s+)?(?P<number>-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*$",
    re.I,
)
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
    """The comparison of an expr as (left side, threshold), or None when it has none we can read."""
    match = COMPARISON.match(" ".join((expr or "").split()))
    if not match or _open_brackets(match.group("left")):
        return None
    value = float(match.group("number"))
    # `> 1e400` is past a float: no level to draw a line at.
    if not math.isfinite(value):
        return None
    return match.group("left").strip(), Threshold(op=match.group("op"), value=value)


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
