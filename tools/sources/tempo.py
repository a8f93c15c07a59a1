"""Grafana Tempo's HTTP API: a bounded sample of the traces of the last minutes, read whole, counted as
the calls each operation's spans made (`query_trace_calls`) and as the step after each step of a trace
(`query_trace_paths`).

Which traces: each service's own sample of each window (the baseline before the incident, the
incident), so a service that few requests reach is read as often as the entry every request passes:
the services are Tempo's values of `service.name` (`/api/search/tag/service.name/values`), each
window of each is one TraceQL search (`{ resource.service.name = "<service>" }`, at most SEARCH_LIMIT
traces), and of each an even share of MAX_TRACES (what a window with fewer traces leaves of its share
goes to the others), spread over its minutes, is read with `/api/traces/<id>` (OTLP JSON). A
service's operations are counted only in the traces chosen for it: a trace chosen because it reached
another service says nothing of how often this one's calls go on.

A span's calls are its child spans; a call is named by the service that served it (`<service>
<operation>`): a child in another service is served there, a client span in the caller by the service
the spans under such client spans are in, in any trace read (a call that failed before its server
wrote a span keeps its name).

A trace's path is its steps in time order: each span's start (its operation) and each line written in a
span (OTLP span events, as a log appender that records its lines on the span writes them), named by its
code place (`code.namespace#code.lineno`, OpenTelemetry's code attributes) or else by its text with
numbers and ids masked. Which traces: a uniform sample of each window's (PATH_TRACES, spread over its
minutes), every step in them counted: a path is the whole request's, whichever services it crossed. A
uniform sample holds a service few requests reach only a few times, too few for its steps' shares to
say anything: each service in fewer than PATH_LEAST of a window's sampled traces (by its own search)
gets more of its own, up to PATH_LEAST (the rarest first, PATH_TOP_UP in all), counted for its steps
only, so the others' shares stay the uniform sample's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

from tools.evidence.trace_calls.source import TraceCallsSource
from tools.evidence.trace_paths.source import TracePathsSource
from tools.logformats import fields_of
from tools.sources.http import HttpSource

# The most traces one call reads whole, and the most one search lists to choose from.
MAX_TRACES = 800
SEARCH_LIMIT = 200
# The most services sampled (two searches each), in name order.
MAX_SERVICES = 50
# The most operations a call answers (those with the most spans), and sets of calls an operation's
# window keeps (the most frequent).
MAX_OPERATIONS = 100
MAX_SHAPES = 20
NS = 10**9
MINUTE_NS = 60 * NS
# The traces a path sample reads whole per window, of the newest PATH_SEARCH_LIMIT it lists.
PATH_TRACES = 200
PATH_SEARCH_LIMIT = 2000
# A service in fewer of a window's sampled traces than this (one few requests reach) gets more of its
# own traces of that window, up to this many, counted for its steps only; at most PATH_TOP_UP added in
# all (a TrainTicket case adds 150-200).
PATH_LEAST = 40
PATH_TOP_UP = 400
# The most steps a call answers (those in the most traces), and steps after one a window keeps.
MAX_STEPS = 300
MAX_NEXT = 8
# A step named by a line's text: this much of it, numbers and ids masked.
STEP_CHARS = 120
# The longest line read for its message field.
PARSED_CHARS = 4096
# What a trace read is counted for: the services it was chosen for (None: every one).
CountedFor = TypeVar("CountedFor")
MASKED = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,})*\b|\d+(?:[.,:/-]\d+)*")


@dataclass(frozen=True)
class Span:
    span_id: str
    parent_id: str
    service: str
    operation: str
    start_ns: int
    # (time ns, step) of each line written in it, in time order.
    events: tuple[tuple[int, str], ...] = ()


class TempoSource(HttpSource, TraceCallsSource, TracePathsSource):
    kind = "tempo"

    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> TempoSource:
        return cls(config["TEMPO_URL"])

    def check(self) -> None:
        now = int(datetime.now().timestamp())
        self.get_json("/api/search", {"start": now - 60, "end": now, "limit": 1})

    def trace_calls(self, *, minutes: int, incident_minutes: int, now: datetime) -> dict[str, Any]:
        windows = windows_of(minutes=minutes, incident_minutes=incident_minutes, now=now)
        with self.one_client():
            listings = self.services_listed(windows)
            chosen: dict[str, set[str]] = {}
            shares = fair_shares([len(listed) for _, listed in listings], budget=MAX_TRACES)
            for (service, listed), share in zip(listings, shares, strict=True):
                for trace_id in spread_sample(listed, limit=share):
                    chosen.setdefault(trace_id, set()).add(service)
            traces = self.read(chosen)
        return {
            "operations": operation_calls(traces, windows=windows),
            "traces_read": len(traces),
            "traces_found": sum(len(listed) for _, listed in listings),
        }

    def trace_paths(self, *, minutes: int, incident_minutes: int, now: datetime) -> dict[str, Any]:
        windows = windows_of(minutes=minutes, incident_minutes=incident_minutes, now=now)
        with self.one_client():
            listings = [
                self.listed(EVERY_TRACE, since=since, until=until, limit=PATH_SEARCH_LIMIT)
                for since, until in windows
            ]
            sampled = [
                trace_id for listed in listings for trace_id in spread_sample(listed, limit=PATH_TRACES)
            ]
            own = self.services_listed(windows)
            chosen = topped_up(sampled, own, least=PATH_LEAST, budget=PATH_TOP_UP)
            traces = self.read(chosen)
        return {
            "steps": path_steps(traces, windows=windows),
            "traces_read": len(traces),
            "traces_found": sum(len(listed) for listed in listings),
        }

    def listed(
        self, query: str, *, since: int, until: int, limit: int = SEARCH_LIMIT
    ) -> list[tuple[int, str]]:
        """(start ns, trace id) of the traces matching a TraceQL query that began in [since, until)."""
        params = {"q": query, "start": since, "end": until, "limit": limit}
        return list(_listed(self.get_json("/api/search", params)))

    def services_listed(self, windows: Sequence[tuple[int, int]]) -> list[tuple[str, list[tuple[int, str]]]]:
        """Each service's own traces of each window (one search each), the services in name order."""
        return [
            (service, self.listed(one_service(service), since=since, until=until))
            for service in self.services()[:MAX_SERVICES]
            for since, until in windows
        ]

    def read(self, chosen: Mapping[str, CountedFor]) -> list[tuple[list[Span], CountedFor]]:
        """Each chosen trace read whole, with the services it counts for."""
        return [
            (list(trace_spans(self.get_json(f"/api/traces/{quote(trace_id)}"))), counted_for)
            for trace_id, counted_for in chosen.items()
        ]

    def services(self) -> list[str]:
        answer = self.get_json("/api/search/tag/service.name/values")
        values = answer.get("tagValues") if isinstance(answer, dict) else None
        return sorted({str(value) for value in values or [] if value})


def windows_of(*, minutes: int, incident_minutes: int, now: datetime) -> list[tuple[int, int]]:
    """[start, end) in Unix seconds of the baseline (the minutes before the incident) and the incident
    (the last `incident_minutes`); one window when the incident is all of them."""
    end = math.ceil(now.timestamp())
    start, split = end - 60 * minutes, end - 60 * min(incident_minutes, minutes)
    return [(start, split), (split, end)] if start < split else [(start, end)]


# TraceQL's spanset every trace matches.
EVERY_TRACE = "{}"


def one_service(service: str) -> str:
    """The TraceQL spanset of one service's spans."""
    quoted = service.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{ resource.service.name = "{quoted}" }}'


def _listed(answer: Any) -> Iterator[tuple[int, str]]:
    """(start ns, trace id) of each trace a search listed."""
    traces = answer.get("traces") if isinstance(answer, dict) else None
    for trace in traces if isinstance(traces, list) else []:
        try:
            yield int(trace["startTimeUnixNano"]), str(trace["traceID"])
        except (KeyError, TypeError, ValueError):
            continue


def fair_shares(sizes: Sequence[int], *, budget: int) -> list[int]:
    """How many of each list to read, `budget` in all: an even share each, and what a short list
    leaves of its share spread over the longer ones."""
    shares = [0] * len(sizes)
    left = budget
    by_size = sorted(range(len(sizes)), key=lambda index: sizes[index])
    for done, index in enumerate(by_size):
        shares[index] = min(sizes[index], left // (len(sizes) - done))
        left -= shares[index]
    return shares


def topped_up(
    sampled: Sequence[str], own: Iterable[tuple[str, Sequence[tuple[int, str]]]], *, least: int, budget: int
) -> dict[str, set[str] | None]:
    """The traces to read, each with the services its steps are counted for (None: every service, a
    trace of the uniform sample). `own`: each service's listing of one window; one with fewer than
    `least` of its traces sampled gets more of them (`spread_sample`), counted for it only, the services
    with the fewest sampled first, at most `budget` traces added in all."""
    uniform = set(sampled)
    added: dict[str, set[str]] = {}
    needing = sorted(
        (
            (len({trace_id for _, trace_id in listed if trace_id in uniform}), service, listed)
            for service, listed in own
        ),
        key=lambda need: need[0],
    )
    for have, service, listed in needing:
        unsampled = [(start_ns, trace_id) for start_ns, trace_id in listed if trace_id not in uniform]
        for trace_id in spread_sample(unsampled, limit=least - have) if have < least else []:
            if trace_id in added or len(added) < budget:
                added.setdefault(trace_id, set()).add(service)
    return {**dict.fromkeys(sampled), **added}


def spread_sample(found: Sequence[tuple[int, str]], *, limit: int) -> list[str]:
    """At most `limit` trace ids, a fair share of each minute's (`fair_shares`) and evenly spaced
    within it: the traces of a busy minute do not crowd out a quiet one's, nor one second a minute's."""
    by_minute: dict[int, list[tuple[int, str]]] = {}
    for start_ns, trace_id in sorted(set(found)):
        by_minute.setdefault(start_ns // MINUTE_NS, []).append((start_ns, trace_id))
    minutes = [by_minute[minute] for minute in sorted(by_minute)]
    shares = fair_shares([len(traces) for traces in minutes], budget=limit)
    return [
        trace_id
        for traces, share in zip(minutes, shares, strict=True)
        for _, trace_id in _evenly(traces, share)
    ]


def _evenly(items: Sequence[tuple[int, str]], count: int) -> list[tuple[int, str]]:
    """At most `count` of the items, evenly spaced."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(index * step)] for index in range(count)]


def trace_spans(trace: Any) -> Iterator[Span]:
    """The spans of an OTLP JSON trace (`{batches: [{resource, scopeSpans: [{spans}]}]}`; Tempo 1's
    `instrumentationLibrarySpans` too), each with its batch's `service.name`."""
    batches = trace.get("batches") if isinstance(trace, dict) else None
    for batch in batches if isinstance(batches, list) else []:
        service = _service_name(batch.get("resource", {}))
        groups = batch.get("scopeSpans") or batch.get("instrumentationLibrarySpans") or []
        for group in groups:
            for span in group.get("spans") or []:
                try:
                    yield Span(
                        span_id=str(span["spanId"]),
                        parent_id=str(span.get("parentSpanId") or ""),
                        service=service,
                        operation=str(span.get("name", "")),
                        start_ns=int(span["startTimeUnixNano"]),
                        events=tuple(sorted(_events(span.get("events")))),
                    )
                except (KeyError, TypeError, ValueError):
                    continue


def _events(events: Any) -> Iterator[tuple[int, str]]:
    """(time ns, step) of each of a span's events that has a time."""
    for event in events if isinstance(events, list) else []:
        try:
            yield int(event["timeUnixNano"]), event_step(str(event.get("name", "")), _attributes(event))
        except (KeyError, TypeError, ValueError):
            continue


def event_step(name: str, attributes: Mapping[str, str]) -> str:
    """What a span event is called as a step: its code place (`code.namespace#code.lineno`), else its
    message's (a structured line's message field; or its exception type, or its name) text with numbers
    and ids masked, bounded."""
    namespace, line = attributes.get("code.namespace", ""), attributes.get("code.lineno", "")
    if namespace and line:
        return f"{namespace}#{line}"
    message = attributes.get("message", "")
    # A structured line is parsed whole; a longer one (a logged body) is named by its head.
    structured = fields_of(message).message if len(message) <= PARSED_CHARS else ""
    text = (structured or message) or attributes.get("exception.type") or name
    return MASKED.sub("<*>", text[: STEP_CHARS * 2])[:STEP_CHARS]


def _attributes(holder: Any) -> dict[str, str]:
    """An OTLP record's attributes as text (`{key, value: {stringValue | intValue | …}}`)."""
    attributes = holder.get("attributes") if isinstance(holder, dict) else None
    found = {}
    for attribute in attributes if isinstance(attributes, list) else []:
        value = attribute.get("value") if isinstance(attribute, dict) else None
        if isinstance(value, dict) and value:
            found[str(attribute.get("key", ""))] = str(next(iter(value.values())))
    return found


def _service_name(resource: Any) -> str:
    attributes = resource.get("attributes") if isinstance(resource, dict) else None
    for attribute in attributes if isinstance(attributes, list) else []:
        if isinstance(attribute, dict) and attribute.get("key") == "service.name":
            return str((attribute.get("value") or {}).get("stringValue", ""))
    return ""


def operation_calls(
    traces: Iterable[tuple[Sequence[Span], Collection[str]]], *, windows: Sequence[tuple[int, int]]
) -> list[dict[str, Any]]:
    """Per (service, operation) whose spans made any call: its spans, and in each window (Unix
    seconds, [start, end)) how many of those that began in it made each set of calls
    (`TraceCallsRecord`'s fields), the operations with the most spans first. Each trace comes with
    the services it was chosen for: only their spans are counted."""
    read = [(spans, chosen_for, _children(spans)) for spans, chosen_for in traces]
    served_by = _callees(children for _, _, children in read)
    counted: dict[tuple[str, str], list[dict[tuple[str, ...], int]]] = {}
    for spans, chosen_for, children in read:
        for span in spans:
            began = span.start_ns / NS
            index = next((i for i, (start, end) in enumerate(windows) if start <= began < end), None)
            if span.service not in chosen_for or index is None:
                continue
            calls = tuple(sorted({_call(child, span, served_by) for child in children.get(span.span_id, [])}))
            shapes = counted.setdefault((span.service, span.operation), [{} for _ in windows])[index]
            shapes[calls] = shapes.get(calls, 0) + 1
    operations = [
        {
            "service": service,
            "operation": operation,
            "spans": sum(sum(shapes.values()) for shapes in per_window),
            "windows": [
                {"start": start, "end": end, "shapes": _shapes_kept(shapes)}
                for (start, end), shapes in zip(windows, per_window, strict=True)
            ],
        }
        for (service, operation), per_window in counted.items()
        if any(calls for shapes in per_window for calls in shapes)
    ]
    operations.sort(key=lambda entry: (-entry["spans"], entry["service"], entry["operation"]))
    return operations[:MAX_OPERATIONS]


def _children(spans: Sequence[Span]) -> dict[str, list[Span]]:
    children: dict[str, list[Span]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    return children


def _callees(traces: Iterable[Mapping[str, list[Span]]]) -> dict[tuple[str, str], str]:
    """(service, operation) of each client span → the other service a span under one of them was in,
    in any trace read (each given as its spans by parent): a call that failed before its server wrote a
    span is still named by who serves it."""
    served_by: dict[tuple[str, str], str] = {}
    for children in traces:
        for span in (span for siblings in children.values() for span in siblings):
            below = next((c.service for c in children.get(span.span_id, []) if c.service != span.service), "")
            if below:
                served_by.setdefault((span.service, span.operation), below)
    return served_by


def _call(child: Span, parent: Span, served_by: Mapping[tuple[str, str], str]) -> str:
    """`<service> <operation>` of a call: served by the child's service, or, for a client span in the
    caller's own service, by the service the spans under such client spans are in."""
    callee = child.service
    if callee == parent.service:
        callee = served_by.get((child.service, child.operation), callee)
    return f"{callee} {child.operation}"


def _shapes_kept(shapes: dict[tuple[str, ...], int]) -> list[dict[str, Any]]:
    kept = sorted(shapes.items(), key=lambda item: (-item[1], item[0]))[:MAX_SHAPES]
    return [{"calls": list(calls), "spans": spans} for calls, spans in kept]


def path_steps(
    traces: Iterable[tuple[Sequence[Span], Collection[str] | None]], *, windows: Sequence[tuple[int, int]]
) -> list[dict[str, Any]]:
    """Per (service, step) taken in the traces: in how many traces it was, and in each window (Unix
    seconds, [start, end), by the trace's start) how many of those that took it went on to each next
    step (`TracePathsRecord`'s fields), each trace counted once; the steps in the most traces first.
    Each trace comes with the services its steps are counted for (None: every one, `topped_up`)."""
    counted: dict[tuple[str, str, bool], list[tuple[int, dict[tuple[str, bool], int]]]] = {}
    for spans, counted_for in traces:
        if not spans:
            continue
        began = min(span.start_ns for span in spans) / NS
        index = next((i for i, (start, end) in enumerate(windows) if start <= began < end), None)
        if index is None:
            continue
        path = trace_path(spans)
        taken: dict[tuple[str, str, bool], set[tuple[str, bool]]] = {}
        for (service, step, event), after in zip(path, [*path[1:], None], strict=True):
            followed = taken.setdefault((service, step, event), set())
            if after is not None:
                followed.add((f"{after[0]} {after[1]}", after[2]))
        for key, followed in taken.items():
            if counted_for is not None and key[0] not in counted_for:
                continue
            per_window = counted.setdefault(key, [(0, {}) for _ in windows])
            traces_in, next_counts = per_window[index]
            for after in followed:
                next_counts[after] = next_counts.get(after, 0) + 1
            per_window[index] = (traces_in + 1, next_counts)
    steps = [
        {
            "service": service,
            "step": step,
            "event": event,
            "traces": sum(traces_in for traces_in, _ in per_window),
            "windows": [
                {"start": start, "end": end, "traces": traces_in, "next": _next_kept(next_counts)}
                for (start, end), (traces_in, next_counts) in zip(windows, per_window, strict=True)
            ],
        }
        for (service, step, event), per_window in counted.items()
    ]
    steps.sort(key=lambda entry: (-entry["traces"], entry["service"], entry["step"]))
    return steps[:MAX_STEPS]


def trace_path(spans: Sequence[Span]) -> list[tuple[str, str, bool]]:
    """(service, step, is a line) of a trace's steps in time order: each span's start, then the lines
    written in it, as they interleave."""
    timed = [(span.start_ns, 0, span.service, span.operation, False) for span in spans]
    timed += [(at, 1, span.service, step, True) for span in spans for at, step in span.events]
    return [(service, step, event) for _, _, service, step, event in sorted(timed)]


def _next_kept(next_counts: dict[tuple[str, bool], int]) -> list[dict[str, Any]]:
    kept = sorted(next_counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_NEXT]
    return [{"step": step, "traces": traces, "event": event} for (step, event), traces in kept]
