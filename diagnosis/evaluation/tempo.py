"""A small server speaking Grafana Tempo's HTTP API, for the tests and the benchmarks: Tempo is not
installable here. It follows Tempo 2.x's documented request and response shapes
(https://grafana.com/docs/tempo/latest/api_docs/):

- `GET /ready` (`ready`) and `GET /api/echo` (`echo`);
- `GET /api/search` (start and end in Unix seconds, limit, default 20): the traces that began in
  [start, end), newest first, `{"traces": [{"traceID", "rootServiceName", "rootTraceName",
  "startTimeUnixNano", "durationMs"}], "metrics": {"inspectedTraces", …}}`. Of TraceQL the empty
  spanset `{}` (every trace) and `{ resource.service.name = "<name>" }` (the traces with a span of that
  service) are understood; another query, or a tag filter, is a 400 saying so rather than an answer
  that ignored it;
- `GET /api/search/tag/service.name/values`: `{"tagValues": [<service>, …]}`;
- `GET /api/traces/<traceID>`: the trace in OTLP JSON, `{"batches": [{"resource": {service.name},
  "scopeSpans": [{"scope", "spans": [...]}]}]}`, one batch per service; an unknown id is a 404
  `trace not found`. A span's events (`"events": [{"timeUnixNano", "name", "attributes"}]`, in time
  order; no key when it has none) are the lines written in it, as an OpenTelemetry log appender
  records them: a trace's path is then its span starts and its lines in time order.

Ids are served as they were given (the span files' hex). A trace's root is its span with no parent
there (none, or one the trace does not hold): its service and operation name the trace in a search.
"""

from __future__ import annotations

import bisect
import json
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from operator import attrgetter
from typing import NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

NS = 10**9
MS_NS = 10**6
# Tempo's default number of traces a search answers.
DEFAULT_LIMIT = 20
# The spans served are the Nezha benchmark's: the instrumentation scope they are said to come from.
SCOPE = "nezha"
# The one TraceQL query understood: the empty spanset, which every trace matches.
EVERY_TRACE = "{}"
# Search filters besides TraceQL that are not implemented: a 400, never silently ignored.
UNSUPPORTED_FILTERS = ("tags", "minDuration", "maxDuration")
TRACES_PATH = "/api/traces/"
SERVICES_PATH = "/api/search/tag/service.name/values"
# The TraceQL spanset of one service's spans: `{ resource.service.name = "checkout" }`.
ONE_SERVICE = re.compile(r'\{\s*resource\.service\.name\s*=\s*"((?:[^"\\]|\\.)*)"\s*\}')


class SpanEvent(NamedTuple):
    """Something that happened in a span (a line written in it), at a time, with attributes."""

    time_ns: int
    name: str
    # OTLP's attribute values, a string or an int.
    attributes: tuple[tuple[str, str | int], ...] = ()


class TempoSpan(NamedTuple):
    """One span; a NamedTuple because a benchmark case holds hundreds of thousands."""

    trace_id: str
    span_id: str
    # "" for a root.
    parent_id: str
    service: str
    operation: str
    start_ns: int
    end_ns: int
    events: tuple[SpanEvent, ...] = ()


class TempoRequestError(ValueError):
    """A request the stand-in does not answer: a 400 with this message."""


@dataclass(frozen=True, slots=True)
class IndexedTrace:
    """A trace as the server keeps it: its spans, the root that names it, when it began and ended."""

    trace_id: str
    # In start order.
    spans: tuple[TempoSpan, ...]
    root: TempoSpan
    start_ns: int
    end_ns: int

    def summary(self) -> dict:
        """The trace as a search lists it."""
        return {
            "traceID": self.trace_id,
            "rootServiceName": self.root.service,
            "rootTraceName": self.root.operation,
            "startTimeUnixNano": str(self.start_ns),
            "durationMs": (self.end_ns - self.start_ns) // MS_NS,
        }


class TempoServer:
    """Spans served on a free loopback port while entered."""

    def __init__(self, spans: Sequence[TempoSpan]) -> None:
        by_trace: dict[str, list[TempoSpan]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        self.traces = {trace_id: _indexed(trace_id, members) for trace_id, members in by_trace.items()}
        # In start order, their starts alongside: a search bisects for its window.
        self.by_start = sorted(self.traces.values(), key=attrgetter("start_ns"))
        self.starts = [trace.start_ns for trace in self.by_start]
        # The same, per service: the traces with a span of it.
        self.of_service: dict[str, list[IndexedTrace]] = {}
        for trace in self.by_start:
            for service in {span.service for span in trace.spans}:
                self.of_service.setdefault(service, []).append(trace)
        self.service_starts = {
            service: [trace.start_ns for trace in traces] for service, traces in self.of_service.items()
        }
        # A trace's JSON, encoded the first time it is asked for: investigations ask for the same ones.
        self.encoded: dict[str, bytes] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive: a client reading hundreds of traces does not connect for each.
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                # The headers and the body are two writes: with Nagle's algorithm the body waits for the
                # client's delayed ACK of the headers, 40 ms an answer on a kept-alive connection.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *_):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                params = {key: values[-1] for key, values in parse_qs(url.query).items()}
                try:
                    status, body, content_type = server.answer(url.path, params)
                except TempoRequestError as error:
                    status, body, content_type = 400, f"{error}\n".encode(), "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled for shutdown every 50 ms, not the default 500: the benchmark starts and stops one a case.
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> TempoServer:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, path: str, params: dict[str, str]) -> tuple[int, bytes, str]:
        """(status, body, content type) for a GET."""
        if path == "/ready":
            return 200, b"ready\n", "text/plain"
        if path == "/api/echo":
            return 200, b"echo", "text/plain"
        if path == "/api/search":
            return 200, json.dumps(self.search(params)).encode(), "application/json"
        if path == SERVICES_PATH:
            return 200, json.dumps({"tagValues": sorted(self.of_service)}).encode(), "application/json"
        if path.startswith(TRACES_PATH):
            body = self.trace_json(unquote(path.removeprefix(TRACES_PATH)))
            if body is None:
                return 404, b"trace not found\n", "text/plain"
            return 200, body, "application/json"
        return 404, b"404 page not found\n", "text/plain"

    def search(self, params: dict[str, str]) -> dict:
        query = params.get("q", EVERY_TRACE).strip()
        traces, starts = self.by_start, self.starts
        if (service := ONE_SERVICE.fullmatch(query)) is not None:
            name = re.sub(r"\\(.)", r"\1", service[1])
            traces, starts = self.of_service.get(name, []), self.service_starts.get(name, [])
        elif query.replace(" ", "") != EVERY_TRACE:
            raise TempoRequestError(
                f"unsupported TraceQL query {query!r}: only {EVERY_TRACE} and one service's spanset are supported"
            )
        if unsupported := [name for name in UNSUPPORTED_FILTERS if name in params]:
            raise TempoRequestError(f"unsupported search parameter: {', '.join(unsupported)}")
        start, end = _seconds(params, "start"), _seconds(params, "end")
        if end < start:
            raise TempoRequestError("http parameter start must be before end")
        limit = _limit(params.get("limit"))
        first = bisect.bisect_left(starts, start * NS)
        last = bisect.bisect_left(starts, end * NS)
        newest = traces[max(first, last - limit) : last][::-1]
        return {
            "traces": [trace.summary() for trace in newest],
            "metrics": {"inspectedTraces": last - first, "completedJobs": 1, "totalJobs": 1},
        }

    def trace_json(self, trace_id: str) -> bytes | None:
        """The trace's OTLP JSON, None for an id no span has."""
        body = self.encoded.get(trace_id)
        if body is None:
            trace = self.traces.get(trace_id)
            if trace is None:
                return None
            # Two threads encoding the same trace at once store the same bytes: no lock needed.
            body = self.encoded[trace_id] = json.dumps(_otlp(trace)).encode()
        return body


def _indexed(trace_id: str, spans: list[TempoSpan]) -> IndexedTrace:
    ordered = tuple(sorted(spans, key=attrgetter("start_ns")))
    held = {span.span_id for span in ordered}
    # A trace whose every span has a parent in it (a cycle) is named by its earliest span.
    root = next((span for span in ordered if span.parent_id not in held), ordered[0])
    return IndexedTrace(
        trace_id=trace_id,
        spans=ordered,
        root=root,
        start_ns=ordered[0].start_ns,
        end_ns=max(span.end_ns for span in ordered),
    )


def _otlp(trace: IndexedTrace) -> dict:
    by_service: dict[str, list[dict]] = {}
    for span in trace.spans:
        by_service.setdefault(span.service, []).append(_otlp_span(span))
    return {
        "batches": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": spans}],
            }
            for service, spans in by_service.items()
        ]
    }


def _otlp_span(span: TempoSpan) -> dict:
    # OTLP JSON leaves an empty field out: a root has no parentSpanId, a span without events no events.
    parent = {"parentSpanId": span.parent_id} if span.parent_id else {}
    otlp = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        **parent,
        "name": span.operation,
        "kind": "SPAN_KIND_UNSPECIFIED",
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
    }
    if span.events:
        otlp["events"] = [_otlp_event(event) for event in sorted(span.events, key=attrgetter("time_ns"))]
    return otlp


def _otlp_event(event: SpanEvent) -> dict:
    return {
        "timeUnixNano": str(event.time_ns),
        "name": event.name,
        "attributes": [{"key": key, "value": _otlp_value(value)} for key, value in event.attributes],
    }


def _otlp_value(value: str | int) -> dict:
    # OTLP JSON writes a 64-bit int as a string.
    return {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}


def _seconds(params: dict[str, str], name: str) -> int:
    raw = params.get(name)
    if raw is None:
        raise TempoRequestError(f"missing {name}: a search needs start and end in Unix seconds")
    try:
        return int(raw)
    except ValueError:
        raise TempoRequestError(f"invalid {name}: {raw!r} is not a time in Unix seconds") from None


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if limit <= 0:
        raise TempoRequestError("invalid limit: must be a positive number")
    return limit
