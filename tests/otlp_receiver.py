"""A local OTLP/HTTP trace receiver for the tests: what an OpenTelemetry collector would be given.

It binds 127.0.0.1 on a free port, decodes each `POST /v1/traces` (a protobuf
`ExportTraceServiceRequest`) and keeps every span as a `ReceivedSpan`, its attributes as Python values.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict
    status_code: int
    status_message: str
    resource: dict
    # Each event as its name and attributes (an exception recorded on the span is one).
    events: list[tuple[str, dict]]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.lock:
                    receiver.paths.append(self.path)
                    receiver.spans.extend(_spans(request))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == TRACES_PATH else 404)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT is set to: the exporter adds `/v1/traces`."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def named(self, name: str) -> list[ReceivedSpan]:
        """The spans called `name` or `name …` (`"stage"` finds every stage), in the order they started."""
        with self.lock:
            spans = list(self.spans)
        return sorted(
            (span for span in spans if span.name == name or span.name.startswith(f"{name} ")),
            key=lambda span: span.start_ns,
        )

    def parent_of(self, span: ReceivedSpan) -> ReceivedSpan | None:
        with self.lock:
            return next((s for s in self.spans if s.span_id == span.parent_span_id), None)

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _spans(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    return [
        ReceivedSpan(
            name=span.name,
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_span_id=span.parent_span_id.hex(),
            kind=span.kind,
            start_ns=span.start_time_unix_nano,
            end_ns=span.end_time_unix_nano,
            attributes={a.key: _value(a.value) for a in span.attributes},
            status_code=span.status.code,
            status_message=span.status.message,
            resource={a.key: _value(a.value) for a in resource_spans.resource.attributes},
            events=[
                (event.name, {a.key: _value(a.value) for a in event.attributes}) for event in span.events
            ],
        )
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]


def _value(value: AnyValue):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: _value(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind) if kind else None
