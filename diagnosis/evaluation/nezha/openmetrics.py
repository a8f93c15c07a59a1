"""A Nezha day written as the OpenMetrics a Kubernetes stack would have scraped: cAdvisor and
kube-state-metrics names, request and latency metrics as an instrumented service exports them, the
call graph as Tempo's service-graph series and, given the day's traces, Tempo's span metrics (each
service's spans per operation); the whole day shifted in time by `shift`.

Units converted: CPU millicores → a counter of CPU seconds, memory Mi → bytes, network bytes per
second → byte counters, workload (operations per second) → a request counter, latency percentiles
(seconds) → summary quantiles. A counter advances by the rate × the seconds since the row before.
The day's node columns are left out (the data do not say which node a pod ran on); a per-edge
request count is not in the data: `traces_service_graph_request_total` counts the minutes an edge
was seen (with a latency cell, where the day has per-edge latency), so it says which edges exist.
`traces_spanmetrics_calls_total` counts each (service, operation)'s spans at the end of every minute
that has a span (0 before its first, unchanged through a minute it had none: its rate falls to 0 when
it stops); a minute in which no span began (no span file) has no sample of it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from diagnosis.evaluation.nezha.data import Day, PodMetrics
from diagnosis.evaluation.nezha.traces import BUCKETS, Counts, Minutes, TraceMinutes

MEBIBYTE = 1024 * 1024
QUANTILES = {"P90": "0.9", "P95": "0.95", "P99": "0.99"}
ENTRY_QUANTILES = {"P50": "0.5", "P90": "0.9", "P95": "0.95", "P99": "0.99"}


@dataclass(frozen=True)
class Family:
    name: str
    type: str
    help: str
    unit: str = ""


CPU = Family(
    "container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds.", "seconds"
)
MEMORY = Family(
    "container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes.", "bytes"
)
RECEIVE = Family(
    "container_network_receive_bytes_total", "counter", "Cumulative count of bytes received.", "bytes"
)
TRANSMIT = Family(
    "container_network_transmit_bytes_total", "counter", "Cumulative count of bytes transmitted.", "bytes"
)
LIMITS = Family(
    "kube_pod_container_resource_limits",
    "gauge",
    "The number of requested limit resource by a container.",
)
REQUESTS = Family("http_server_requests_total", "counter", "Total number of requests the server handled.")
SERVER_LATENCY = Family(
    "http_server_request_duration_seconds",
    "summary",
    "Duration of requests the server handled, quantiles over the last minute, in seconds.",
    "seconds",
)
CLIENT_LATENCY = Family(
    "http_client_request_duration_seconds",
    "summary",
    "Duration of requests the service sent to services it calls, quantiles over the last minute, in seconds.",
    "seconds",
)
ENTRY_LATENCY = Family(
    "loadgenerator_request_duration_seconds",
    "summary",
    "Duration of the load generator's requests to the entry service, quantiles over the last minute, in seconds.",
    "seconds",
)
ENTRY_SUCCESS = Family(
    "loadgenerator_request_success_ratio",
    "gauge",
    "Share of the load generator's requests to the entry service that succeeded, over the last minute.",
    "ratio",
)
GRAPH = Family(
    "traces_service_graph_request_total",
    "counter",
    "Total count of requests between two nodes (here: minutes the edge was seen).",
)
EDGE_LATENCY = {
    "client": Family(
        "traces_service_graph_request_client_seconds",
        "summary",
        "Time for a request between two nodes as seen from the client, median over the last minute.",
        "seconds",
    ),
    "server": Family(
        "traces_service_graph_request_server_seconds",
        "summary",
        "Time for a request between two nodes as seen from the server, median over the last minute.",
        "seconds",
    ),
}
# Each edge's span durations, from traces (Tempo's metrics-generator's histograms).
TRACE_LATENCY = {
    side: Family(
        f"traces_service_graph_request_{side}_seconds",
        "histogram",
        f"Time for a request between two nodes as seen from the {side}.",
        "seconds",
    )
    for side in ("client", "server")
}
# Each service's spans per operation, from traces (Tempo's metrics-generator's span metrics).
SPAN_CALLS = Family(
    "traces_spanmetrics_calls_total",
    "counter",
    "Total count of the spans of each operation of a service (Tempo's metrics-generator span metrics).",
)
# Every family a day may have without traces, for the metadata the server is given.
FAMILIES = (
    CPU, MEMORY, RECEIVE, TRANSMIT, LIMITS, REQUESTS, SERVER_LATENCY, CLIENT_LATENCY,
    ENTRY_LATENCY, ENTRY_SUCCESS, GRAPH, *EDGE_LATENCY.values(),
)  # fmt: skip

Points = list[tuple[datetime, float]]
# A minute's spans are counted at its end.
MINUTE_END = timedelta(seconds=59)
Series = tuple[dict[str, str], Points]


def day_families(day: Day, *, traces: TraceMinutes | None = None) -> tuple[Family, ...]:
    """The families of a day, for the metadata its server is given: the edges' latency is a histogram
    where it comes from traces, a summary of medians where from the day's own files; the span metrics
    where the traces have operations."""
    families = FAMILIES
    if traces is not None and traces.durations:
        edge_summaries = set(EDGE_LATENCY.values())
        families = (*(f for f in FAMILIES if f not in edge_summaries), *TRACE_LATENCY.values())
    if traces is not None and traces.operations:
        families = (*families, SPAN_CALLS)
    return families


def day_openmetrics(
    day: Day, *, namespace: str, shift: timedelta, traces: TraceMinutes | None = None
) -> Iterator[str]:
    """The day's OpenMetrics text, line by line, ending with `# EOF`; with `traces`, each service's spans
    per operation and, where they have edges, each edge's latency as histograms (in place of the day's
    own per-edge medians)."""
    traced = traces is not None and bool(traces.durations)
    families: list[tuple[Family, list[Series]]] = [
        (
            CPU,
            [
                (_labels(p, namespace), _counter(p.columns.get("CpuUsage(m)"), scale=1 / 1000))
                for p in day.pods
            ],
        ),
        (
            MEMORY,
            [(_labels(p, namespace), _scaled(p.columns.get("MemoryUsage(Mi)"), MEBIBYTE)) for p in day.pods],
        ),
        (
            RECEIVE,
            [(_labels(p, namespace), _counter(p.columns.get("NetworkReceiveBytes"))) for p in day.pods],
        ),
        (
            TRANSMIT,
            [(_labels(p, namespace), _counter(p.columns.get("NetworkTransmitBytes"))) for p in day.pods],
        ),
        (LIMITS, [series for p in day.pods for series in _limits(p, namespace)]),
        (REQUESTS, [(_labels(p, namespace), _counter(p.columns.get("PodWorkload(Ops)"))) for p in day.pods]),
        (SERVER_LATENCY, [s for p in day.pods for s in _quantiles(p, namespace, "PodServerLatency")]),
        (CLIENT_LATENCY, [s for p in day.pods for s in _quantiles(p, namespace, "PodClientLatency")]),
        (ENTRY_LATENCY, _entry_latency(day, namespace)),
        (ENTRY_SUCCESS, _entry_success(day, namespace)),
        (GRAPH, _graph(day)),
        (SPAN_CALLS, _span_calls(traces.operations, namespace) if traces is not None else []),
    ]
    if not traced:
        families += [(EDGE_LATENCY[side], _edge_latency(edges)) for side, edges in day.edge_latency.items()]
    for family, series in families:
        kept = [(labels, points) for labels, points in series if points]
        if kept:
            yield from _family_lines(family, kept, shift)
    if traced:
        yield from histogram_lines(TRACE_LATENCY["client"], traces.client_durations, shift)
        yield from histogram_lines(TRACE_LATENCY["server"], traces.durations, shift)
    yield "# EOF"


def openmetrics_write(
    day: Day, *, namespace: str, shift: timedelta, path: Path, traces: TraceMinutes | None = None
) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for line in day_openmetrics(day, namespace=namespace, shift=shift, traces=traces):
            handle.write(line + "\n")
    return path


def histogram_lines(family: Family, edges: Minutes, shift: timedelta) -> Iterator[str]:
    """Cumulative buckets, count and sum per edge, one sample at the end of each minute with spans."""
    yield f"# TYPE {family.name} {family.type}"
    yield f"# UNIT {family.name} {family.unit}"
    yield f"# HELP {family.name} {family.help}"
    for (client, server), minutes in sorted(edges.items()):
        labels = f'client="{_escaped(client)}",server="{_escaped(server)}"'
        bounds = [*(f"{bound:g}" for bound in BUCKETS), "+Inf"]
        cumulative, count, total = [0] * len(bounds), 0, 0.0
        # OpenMetrics wants a series' samples together: each bucket's, then the count's, then the sum's.
        buckets: list[list[str]] = [[] for _ in bounds]
        counts, sums = [], []
        for minute, durations in sorted(minutes.items()):
            for seconds in durations:
                for index, bound in enumerate(BUCKETS):
                    cumulative[index] += seconds <= bound
            count += len(durations)
            cumulative[-1] = count
            total += sum(durations)
            at = f"{(minute + shift + MINUTE_END).timestamp():.3f}"
            for index, bound in enumerate(bounds):
                buckets[index].append(
                    f'{family.name}_bucket{{{labels},le="{bound}"}} {cumulative[index]} {at}'
                )
            counts.append(f"{family.name}_count{{{labels}}} {count} {at}")
            sums.append(f"{family.name}_sum{{{labels}}} {total!r} {at}")
        for lines in (*buckets, counts, sums):
            yield from lines


def _family_lines(family: Family, series: list[Series], shift: timedelta) -> Iterator[str]:
    # OpenMetrics names a counter's family without `_total`, its samples with it.
    name = family.name.removesuffix("_total") if family.type == "counter" else family.name
    yield f"# TYPE {name} {family.type}"
    if family.unit:
        yield f"# UNIT {name} {family.unit}"
    yield f"# HELP {name} {family.help}"
    for labels, points in series:
        label_text = ",".join(f'{key}="{_escaped(value)}"' for key, value in labels.items())
        for at, value in points:
            yield f"{family.name}{{{label_text}}} {value!r} {(at + shift).timestamp():.3f}"


def _labels(pod: PodMetrics, namespace: str) -> dict[str, str]:
    return {"namespace": namespace, "pod": pod.pod, "service": pod.service, "container": pod.service}


def _counter(points: Points | None, *, scale: float = 1.0) -> Points:
    """A per-second rate as a counter: each row adds the rate × the seconds since the row before (the
    first row starts it at 0)."""
    total, counted, before = 0.0, [], None
    for at, rate in points or []:
        if before is not None:
            total += rate * scale * (at - before).total_seconds()
        counted.append((at, total))
        before = at
    return counted


def _scaled(points: Points | None, factor: float) -> Points:
    return [(at, value * factor) for at, value in points or []]


def _limits(pod: PodMetrics, namespace: str) -> Iterable[Series]:
    """Each container's limit from usage ÷ usage share (the day's median: a limit does not move)."""
    labels = _labels(pod, namespace)
    for resource, unit, usage, share, factor in (
        ("cpu", "core", "CpuUsage(m)", "CpuUsageRate(%)", 1 / 1000),
        ("memory", "byte", "MemoryUsage(Mi)", "MemoryUsageRate(%)", MEBIBYTE),
    ):
        shares = dict(pod.columns.get(share) or [])
        ratios = [
            value * factor / (shares[at] / 100)
            for at, value in pod.columns.get(usage) or []
            if shares.get(at)
        ]
        if ratios:
            limit = statistics.median(ratios)
            points = [(at, limit) for at, _ in pod.columns.get(usage) or []]
            yield labels | {"resource": resource, "unit": unit}, points


def _quantiles(pod: PodMetrics, namespace: str, prefix: str) -> Iterable[Series]:
    for suffix, quantile in QUANTILES.items():
        yield (
            _labels(pod, namespace) | {"quantile": quantile},
            list(pod.columns.get(f"{prefix}{suffix}(s)") or []),
        )


def _entry_latency(day: Day, namespace: str) -> list[Series]:
    return [
        ({"namespace": namespace, "quantile": quantile}, list(day.entry.get(f"Latency{suffix}(s)") or []))
        for suffix, quantile in ENTRY_QUANTILES.items()
    ]


def _entry_success(day: Day, namespace: str) -> list[Series]:
    points = day.entry.get("SuccessRate(%)") or []
    return [({"namespace": namespace}, [(at, value / 100) for at, value in points])]


def _graph(day: Day) -> list[Series]:
    """One counter per edge: +1 a minute the edge was seen (a latency cell), else +1 every minute."""
    seen = day.edge_latency.get("client", {})
    minutes = [at for at, _ in day.pods[0].columns.get("CpuUsage(m)") or []]
    series = []
    for client, server in day.edges:
        times = [at for at, _ in seen[(client, server)]] if (client, server) in seen else minutes
        series.append(({"client": client, "server": server}, [(at, float(n)) for n, at in enumerate(times)]))
    return series


def _edge_latency(edges: dict[tuple[str, str], Points]) -> list[Series]:
    return [
        ({"client": client, "server": server, "quantile": "0.5"}, list(points))
        for (client, server), points in edges.items()
    ]


def _span_calls(operations: Counts, namespace: str) -> list[Series]:
    """Each operation's spans so far, at the end of every minute with any span (of any operation)."""
    covered = sorted({minute for minutes in operations.values() for minute in minutes})
    series = []
    for (service, operation), minutes in sorted(operations.items()):
        total, points = 0, []
        for minute in covered:
            total += minutes.get(minute, 0)
            points.append((minute + MINUTE_END, float(total)))
        series.append(({"namespace": namespace, "service": service, "span_name": operation}, points))
    return series


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
