"""The timeline of an investigation's answer: each move its conclusion names as one track over a
shared time axis, normalised to 0..1 (its own lowest to highest) so series in cores, bytes and
seconds share one chart, with its onset.

A track is drawn from the records its mark cites, read back from the recorded results: a range
series' samples; a log pattern's lines (the first number of each message at its time); an alert,
as a step from 0 to 1 at its start; an operation's calls, as the share of its spans that made them
over each window read (a step from the baseline's share to the incident's). Pure: the chat page's
selector passes the session's results.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from diagnosis.pipeline.investigation.change import series_points
from diagnosis.pipeline.investigation.records import NUMBER, alert_started
from diagnosis.pipeline.slot import TimelineMark
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.logs.record import LogLine
from tools.evidence.result import ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_paths.record import TracePathsRecord

SERIES, LOG, ALERT = "series", "log", "alert"
LINE_TIME = "%Y-%m-%d %H:%M:%S"
# A window's share is held until this long (seconds) before its end, where the next one's begins.
WINDOW_EDGE = 1.0
# The axis opens at least this long (or this share of it) before the earliest onset.
LEAD = timedelta(minutes=1)
LEAD_SHARE = 0.1


@dataclass(frozen=True)
class Track:
    label: str
    kind: str
    onset: float
    # (unix time, 0..1), oldest first.
    points: list[tuple[float, float]]


@dataclass(frozen=True)
class Timeline:
    start: float
    end: float
    tracks: list[Track]


def timeline_of(marks: Sequence[TimelineMark], results: Mapping[int, ToolResult]) -> Timeline | None:
    """The tracks of the marks whose records are in `results` (by invocation id); None when none is."""
    drawn: list[tuple[TimelineMark, str, list[tuple[float, float]]]] = []
    for mark in marks:
        kind, points = _points(mark, results)
        if kind:
            drawn.append((mark, kind, points))
    if not drawn:
        return None
    times = [t for _, _, points in drawn for t, _ in points] + [m.onset.timestamp() for m, _, _ in drawn]
    start, end = min(times), max(times)
    if end <= start:
        start, end = start - LEAD.total_seconds(), end + LEAD.total_seconds()
    # An onset at the axis' very start would hide where it began: a little before it is drawn too.
    first = min(mark.onset.timestamp() for mark, _, _ in drawn)
    if first - start < LEAD_SHARE * (end - start):
        start = first - max(LEAD.total_seconds(), LEAD_SHARE * (end - start))
    tracks = []
    for mark, kind, points in drawn:
        onset = mark.onset.timestamp()
        if kind == ALERT:
            # Normal until its start, firing after.
            steps = [(start, 0.0), (onset, 0.0), (onset, 1.0), (end, 1.0)]
            tracks.append(Track(label=mark.label, kind=kind, onset=onset, points=steps))
        else:
            tracks.append(Track(label=mark.label, kind=kind, onset=onset, points=_normalised(points)))
    return Timeline(start=start, end=end, tracks=tracks)


def _points(mark: TimelineMark, results: Mapping[int, ToolResult]) -> tuple[str, list[tuple[float, float]]]:
    kind, points = "", []
    for binding in mark.bindings:
        result = (
            results.get(binding.source_invocation_id) if binding.source_invocation_id is not None else None
        )
        record = result.record_at(binding.raw_path) if result is not None else None
        if isinstance(record, SeriesRecord) and not record.instant:
            kind = SERIES
            points += [(at.timestamp(), value) for at, value in series_points(record)]
        elif isinstance(record, LogLine) and (point := _line_point(record)) is not None:
            kind = LOG
            points.append(point)
        elif isinstance(record, AlertRecord) and alert_started(record) is not None:
            kind = kind or ALERT
        elif isinstance(record, TraceCallsRecord | TracePathsRecord) and mark.calls:
            kind = SERIES
            points += _share_steps(record, mark)
    if kind == LOG and len(points) < 2:
        return "", []
    if kind == SERIES and len(points) < 2:
        return "", []
    return kind, sorted(set(points))


def _share_steps(
    record: TraceCallsRecord | TracePathsRecord, mark: TimelineMark
) -> list[tuple[float, float]]:
    """The share of each window, held from its start to just before its end (the next window's
    share begins there)."""
    steps = []
    for window in record.windows:
        share = record.share(mark.calls, start=window.began, end=window.ended, given=mark.given)
        if share is not None:
            steps += [(window.start, share[0]), (window.end - WINDOW_EDGE, share[0])]
    return steps


def _line_point(line: LogLine) -> tuple[float, float] | None:
    match = NUMBER.search(line.message)
    try:
        at = datetime.strptime(line.timestamp[:19], LINE_TIME).astimezone()
    except ValueError:
        return None
    if match is None:
        return None
    value = float(match[1])
    return (at.timestamp(), value) if math.isfinite(value) else None


def _normalised(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    low = min(value for _, value in points)
    high = max(value for _, value in points)
    if high == low:
        return [(at, 0.5) for at, _ in points]
    # Past a float's range the difference overflows: scale both ends down first.
    scale = max(abs(low), abs(high))
    return [(at, (value / scale - low / scale) / (high / scale - low / scale)) for at, value in points]
