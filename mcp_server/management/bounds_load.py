"""What one PromQL call over every series costs, stored, returned and read back (`bench_bounds`).

`prometheus_answer` writes a Prometheus `/api/v1/query` answer of a given size: every series of one
high-cardinality metric (`{__name__=~".+"}` itself is refused before it is sent, as a caller's query
without a metric name), from a server that ignores the query's `limit` as servers before it did;
`prometheus_serving` serves it on a free loopback port. `bounds_measure` runs MCP `query_promql` calls
through the real recording path on the current (throwaway) database, then reads their session back
through the API's trace and MCP `session_trace`, and returns the bytes each step held and the
process's RSS.
"""

from __future__ import annotations

import json
import resource
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.contrib.auth import get_user_model
from django.db.models import TextField
from django.db.models.functions import Cast, Length
from django.test import Client

from diagnosis.models import ToolInvocation
from diagnosis.serializers import trace_url
from mcp_server.server import Caller, mcp_tools
from tools.evidence.registry import SERIES

# A metric with a series per container and interface of a large cluster.
METRIC = "container_network_receive_bytes_total"
PAGE_BYTES = resource.getpagesize()
MB = 1024 * 1024


def prometheus_answer(*, megabytes: float, at: float) -> tuple[bytes, int]:
    """An instant query's answer of at least `megabytes` MB, and its number of series."""
    target = int(megabytes * MB)
    series, size, index = [], 0, 0
    while size < target:
        record = {
            "metric": {
                "__name__": METRIC,
                "instance": f"node-{index // 40:05d}:10250",
                "job": "kubelet",
                "pod": f"pod-{index // 4:06d}",
                "interface": f"eth{index % 4}",
            },
            "value": [at, str(1_000_000 + index * 37)],
        }
        series.append(record)
        size += len(json.dumps(record)) + 2
        index += 1
    body = {"status": "success", "data": {"resultType": "vector", "result": series}}
    return json.dumps(body).encode(), len(series)


@contextmanager
def prometheus_serving(answer: bytes) -> Iterator[str]:
    """`answer` to every `/api/v1/query` on a free 127.0.0.1 port; yields the server's URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path.startswith("/api/v1/query")
            body = answer if found else b'{"status": "error", "error": "not found"}'
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class BoundsMeasure:
    calls: int
    # JSON bytes of one invocation's stored output and evidence refs (the median over the calls).
    stored_bytes: int
    # The MCP `query_promql` result as its client receives it.
    returned_bytes: int
    # The session read back: the API's trace (first page) and MCP `session_trace`.
    api_trace_bytes: int
    mcp_trace_bytes: int
    seconds_per_call: float
    rss_before_mb: float
    peak_rss_mb: float
    truncated: bool

    def as_dict(self) -> dict:
        return asdict(self)


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_BYTES / MB


def bounds_measure(*, calls: int) -> BoundsMeasure:
    """`calls` MCP `query_promql` calls of the metric by one user, then their last session read back."""
    user = get_user_model().objects.create_user("bench-bounds")
    caller = Caller(user=user, site_url="")
    tools = {tool.name: tool for tool in mcp_tools(sessions_inline=True)}
    series_tool = next(tool for tool in tools.values() if tool.evidence_tool == SERIES.tool)
    rss_before = _rss_mb()
    seconds, returned = [], []
    for _ in range(calls):
        started = time.perf_counter()
        result = series_tool.call(caller, {"query": METRIC})
        seconds.append(time.perf_counter() - started)
        if not result.success:
            raise RuntimeError(f"{series_tool.name} failed: {result.error}")
        returned.append(len(result.model_dump_json().encode()))
    # Measured by the database, so no stored row is read back into this process for it.
    stored = ToolInvocation.objects.annotate(
        size=Length(Cast("output", TextField())) + Length(Cast("retrieval_details", TextField()))
    ).values_list("size", flat=True)
    client = Client()
    client.force_login(user)
    api_trace = client.get(trace_url(result.session_id))
    mcp_trace = tools["session_trace"].call(caller, {"session_id": result.session_id})
    last = ToolInvocation.objects.filter(session__session_id=result.session_id).values_list(
        "output__truncated", flat=True
    )
    return BoundsMeasure(
        calls=calls,
        stored_bytes=int(statistics.median(stored)),
        returned_bytes=int(statistics.median(returned)),
        api_trace_bytes=len(api_trace.content),
        mcp_trace_bytes=len(json.dumps(mcp_trace, ensure_ascii=False).encode()),
        seconds_per_call=statistics.median(seconds),
        rss_before_mb=rss_before,
        # ru_maxrss is in KiB on Linux.
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        truncated=bool(last.first()),
    )
