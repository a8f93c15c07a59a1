"""TrainTicket's span files as Tempo's service-graph histograms: per edge between two services, the
parent span's duration as the client saw the call and the child span's as the server spent it."""

import csv
import io
from datetime import UTC, datetime, timedelta

from diagnosis.evaluation.nezha.openmetrics import TRACE_LATENCY, histogram_lines
from diagnosis.evaluation.nezha.traces import edge_minutes

MINUTE = 1_700_000_040 * 10**9
MS = 10**6


def span_file(spans: list[tuple[str, str, str, int, int]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "TraceID",
            "SpanID",
            "ParentID",
            "PodName",
            "OperationName",
            "StartTimeUnixNano",
            "EndTimeUnixNano",
            "Duration",
        ]
    )
    for span, parent, pod, start_ms, end_ms in spans:
        writer.writerow(
            [
                "t1",
                span,
                parent,
                pod,
                "op",
                MINUTE + start_ms * MS,
                MINUTE + end_ms * MS,
                (end_ms - start_ms) * 1000,
            ]
        )
    return out.getvalue()  # fmt: skip


def test_a_call_between_two_services_is_its_client_spans_and_its_server_spans_durations():
    text = span_file([
        ("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 2600),
        ("b", "a", "ledger-gateway-6f6cfc45b-d9pnv", 10, 2510),
        ("c", "b", "ledger-store-5b67c48447-mv5hb", 2000, 2500),
        ("d", "c", "ledger-store-5b67c48447-mv5hb", 2100, 2200),
    ])  # fmt: skip

    edges = edge_minutes(iter([("08_44_trace.csv", text)]))

    minute = datetime.fromtimestamp(MINUTE // 10**9, tz=UTC)
    pair = ("ledger-gateway", "ledger-store")
    assert list(edges.durations) == list(edges.client_durations) == [pair]
    assert edges.durations[pair] == {minute: [0.5]}
    assert edges.client_durations[pair] == {minute: [2.5]}


def test_both_views_are_written_as_cumulative_histograms_at_each_minutes_end():
    text = span_file([
        ("b", "root", "cart-7d9f8c6b5-x2x9z", 0, 2500),
        ("c", "b", "pricing-5b67c48447-mv5hb", 2000, 2500),
    ])  # fmt: skip
    edges = edge_minutes(iter([("08_44_trace.csv", text)]))

    client = list(histogram_lines(TRACE_LATENCY["client"], edges.client_durations, timedelta(0)))
    server = list(histogram_lines(TRACE_LATENCY["server"], edges.durations, timedelta(0)))

    assert client[0] == "# TYPE traces_service_graph_request_client_seconds histogram"
    labels = 'client="cart",server="pricing"'
    at = f"{MINUTE / 10**9 + 59:.3f}"
    assert f'traces_service_graph_request_client_seconds_bucket{{{labels},le="2.048"}} 0 {at}' in client
    assert f'traces_service_graph_request_client_seconds_bucket{{{labels},le="4.096"}} 1 {at}' in client
    assert f'traces_service_graph_request_server_seconds_bucket{{{labels},le="0.512"}} 1 {at}' in server
    assert f"traces_service_graph_request_server_seconds_sum{{{labels}}} 0.5 {at}" in server
