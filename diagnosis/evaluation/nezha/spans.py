"""The Nezha repository's span files as Tempo stores them: each span once, its service the pod's,
shifted like the metrics, served by the Tempo stand-in (`diagnosis.evaluation.tempo`) so an
investigation reads traces as it would from Tempo.

A case serves only the files of its own read window (`traces.trace_files_between`): a day's files
are up to a few hundred megabytes of spans, more than a case needs and more than it should hold.

Each log line of the window's log files (`logs.log_files_between`) written in a span read (its row's
`TraceID` and `SpanID`) is an event of that span, `log`, with the line as `message` and, where the line
states its code place as a Java logback line does (`… INFO  t.s.TravelServiceImpl#532 …`), OpenTelemetry's
`code.namespace` and `code.lineno`, as its logback appender records them: a trace source reads a trace's
path as its span starts and its lines in time order. A line in no span read is left out.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from diagnosis.evaluation.apart import served_apart
from diagnosis.evaluation.nezha.data import service_of_pod
from diagnosis.evaluation.nezha.logs import container_line
from diagnosis.evaluation.nezha.traces import span_columns
from diagnosis.evaluation.tempo import SpanEvent, TempoServer, TempoSpan

# How the span files mark a span without a parent.
ROOT_PARENTS = ("root", "")
# The log files' columns an event is made of: when, in which span, the container runtime's record.
LOG_COLUMNS = ("TimeUnixNano", "TraceID", "SpanID", "Log")
# The name of an event that is a line written in the span.
LOG_EVENT = "log"
# A logback line's code place, `<logger>#<line>` (`t.s.TravelServiceImpl#532`), near its head; its tail
# (a logged response body, kilobytes) is not read.
CODE_PLACE = re.compile(r"(?<![\w.$])([A-Za-z_$][\w$]*(?:\.[\w$]+)*)#(\d+)\b")
CODE_HEAD = 200

SpanKey = tuple[str, str]
Attributes = tuple[tuple[str, str | int], ...]


def tempo_spans(
    files: Iterable[tuple[str, str]], *, shift: timedelta, logs: Iterable[tuple[str, str]] = ()
) -> list[TempoSpan]:
    """Every span of the files once, each `shift` later, with the lines of the log files written in it
    as its events in time order; a file is read, then let go."""
    shifted = int(shift.total_seconds()) * 10**9
    # Neighbouring files overlap by seconds: a span already read is not repeated.
    seen: set[SpanKey] = set()
    # One string per distinct value, not one per row: a trace's id, a pod's service and an operation
    # repeat across thousands of rows (a case's spans take two fifths less memory).
    shared: dict[str, str] = {}
    service_of: dict[str, str] = {}
    # The events first, so that each span is made once, with its own.
    events = _span_events(logs, shifted=shifted, shared=shared)
    spans = []
    for name, text in files:
        rows = csv.reader(io.StringIO(text))
        header = next(rows, [])
        at = span_columns(name, header)
        # A short row (a blank line, a file cut off) is no span.
        for row in rows:
            if len(row) != len(header):
                continue
            trace_id, span_id = shared.setdefault(row[at.trace], row[at.trace]), row[at.span]
            if (trace_id, span_id) in seen:
                continue
            seen.add((trace_id, span_id))
            parent, pod, operation = row[at.parent], row[at.pod], row[at.operation]
            if pod not in service_of:
                service_of[pod] = service_of_pod(pod)
            written = events.pop((trace_id, span_id), None)
            spans.append(
                TempoSpan(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_id="" if parent in ROOT_PARENTS else parent,
                    service=service_of[pod],
                    operation=shared.setdefault(operation, operation),
                    start_ns=int(row[at.start]) + shifted,
                    end_ns=int(row[at.end]) + shifted,
                    events=tuple(sorted(written)) if written else (),
                )
            )
    return spans


def _span_events(
    logs: Iterable[tuple[str, str]], *, shifted: int, shared: dict[str, str]
) -> dict[SpanKey, set[SpanEvent]]:
    """The log files' lines with a trace and a span id, per (trace id, span id), each `shifted` ns later.
    A file lacking one of `LOG_COLUMNS` gives none rather than failing the case: its lines add to the
    spans, which stand without them."""
    events: dict[SpanKey, set[SpanEvent]] = {}
    # A code place's attributes, made once: a service logs from a few hundred places.
    places: dict[str, Attributes] = {}
    for _, text in logs:
        rows = csv.reader(io.StringIO(text))
        header = next(rows, [])
        if any(column not in header for column in LOG_COLUMNS):
            continue
        time_at, trace_at, span_at, log_at = (header.index(column) for column in LOG_COLUMNS)
        for row in rows:
            # A short row (a blank line, a file cut off) is no line.
            if len(row) != len(header) or not (trace_id := row[trace_at]) or not (span_id := row[span_at]):
                continue
            try:
                at = int(row[time_at])
            except ValueError:
                continue
            if not (line := container_line(row[log_at])):
                continue
            event = SpanEvent(at + shifted, LOG_EVENT, (("message", line), *_code_place(line, places)))
            # A set: a span is written in one pod, so the same time and line in it is one row that
            # neighbouring files both hold.
            events.setdefault((shared.setdefault(trace_id, trace_id), span_id), set()).add(event)
    return events


def _code_place(line: str, places: dict[str, Attributes]) -> Attributes:
    """OpenTelemetry's code attributes of the place a logback line states, `()` for a line stating none."""
    match = CODE_PLACE.search(line, 0, CODE_HEAD)
    if match is None:
        return ()
    place = places.get(match[0])
    if place is None:
        place = places[match[0]] = (("code.namespace", match[1]), ("code.lineno", int(match[2])))
    return place


@contextmanager
def spans_served(spans: list[TempoSpan]) -> Iterator[str | None]:
    """A Tempo stand-in over the spans on a loopback port, in a process of its own as Tempo is
    (`apart`), its URL; None when there are none."""
    if not spans:
        yield None
        return
    with served_apart(TempoServer, spans) as url:
        yield url
