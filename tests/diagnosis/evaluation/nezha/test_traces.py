"""The span files as Tempo's metrics-generator counts them: per edge between two services, the parent
span's duration as the client saw the call and the child span's as the server spent it (service-graph
histograms); per service and operation, its spans (span metrics, a cumulative counter)."""

import csv
import io
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from diagnosis.evaluation.nezha.data import Day, PodMetrics
from diagnosis.evaluation.nezha.openmetrics import (
    SPAN_CALLS,
    TRACE_LATENCY,
    day_families,
    day_openmetrics,
    histogram_lines,
)
from diagnosis.evaluation.nezha.traces import trace_files, trace_files_between, trace_minutes

MINUTE = 1_700_000_040 * 10**9
MS = 10**6


def span_file(
    spans: list[tuple[str, str, str, int, int]], *, operations: dict[str, str] | None = None
) -> str:
    """A span file of (span, parent, pod, start ms, end ms) from `MINUTE`, each span's operation
    `operations[span]` (else `op`)."""
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
                (operations or {}).get(span, "op"),
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

    edges = trace_minutes(iter([("08_44_trace.csv", text)]))

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
    edges = trace_minutes(iter([("08_44_trace.csv", text)]))

    client = list(histogram_lines(TRACE_LATENCY["client"], edges.client_durations, timedelta(0)))
    server = list(histogram_lines(TRACE_LATENCY["server"], edges.durations, timedelta(0)))

    assert client[0] == "# TYPE traces_service_graph_request_client_seconds histogram"
    labels = 'client="cart",server="pricing"'
    at = f"{MINUTE / 10**9 + 59:.3f}"
    assert f'traces_service_graph_request_client_seconds_bucket{{{labels},le="2.048"}} 0 {at}' in client
    assert f'traces_service_graph_request_client_seconds_bucket{{{labels},le="4.096"}} 1 {at}' in client
    assert f'traces_service_graph_request_server_seconds_bucket{{{labels},le="0.512"}} 1 {at}' in server
    assert f"traces_service_graph_request_server_seconds_sum{{{labels}}} 0.5 {at}" in server


def minute(index: int) -> datetime:
    return datetime.fromtimestamp(MINUTE // 10**9 + 60 * index, tz=UTC)


def test_every_span_is_counted_for_its_service_and_operation_in_the_minute_it_began():
    text = span_file(
        [
            ("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 2600),
            ("b", "a", "ledger-gateway-6f6cfc45b-d9pnv", 10, 2510),
            ("c", "b", "ledger-store-5b67c48447-mv5hb", 2000, 2500),
            ("d", "gone", "ledger-store-5b67c48447-mv5hb", 61_000, 61_100),
            ("e", "gone", "ledger-store-5b67c48447-x7k2p", 62_000, 62_100),
        ],
        operations={
            "a": "GET /ledger",
            "b": "GET /ledger",
            "c": "Store.Read",
            "d": "Store.Read",
            "e": "Store.Read",
        },
    )

    counted = trace_minutes(iter([("08_44_trace.csv", text)])).operations

    assert counted == {
        ("ledger-gateway", "GET /ledger"): {minute(0): 2},
        ("ledger-store", "Store.Read"): {minute(0): 1, minute(1): 2},
    }


def test_a_span_two_neighbouring_files_both_hold_is_counted_once():
    first = span_file([
        ("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 100),
        ("b", "root", "ledger-gateway-6f6cfc45b-d9pnv", 59_000, 59_100),
    ])  # fmt: skip
    second = span_file([
        ("b", "root", "ledger-gateway-6f6cfc45b-d9pnv", 59_000, 59_100),
        ("c", "root", "ledger-gateway-6f6cfc45b-d9pnv", 61_000, 61_100),
    ])  # fmt: skip

    counted = trace_minutes(iter([("08_44_trace.csv", first), ("08_45_trace.csv", second)])).operations

    assert counted == {("ledger-gateway", "op"): {minute(0): 2, minute(1): 1}}


def test_without_edges_the_operations_are_counted_and_no_edge_is_kept():
    text = span_file([
        ("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 2600),
        ("c", "a", "ledger-store-5b67c48447-mv5hb", 2000, 2500),
    ])  # fmt: skip

    traces = trace_minutes(iter([("08_44_trace.csv", text)]), edges=False)

    assert traces.durations == traces.client_durations == {}
    assert traces.operations == {
        ("ledger-gateway", "op"): {minute(0): 1},
        ("ledger-store", "op"): {minute(0): 1},
    }


def one_pod_day() -> Day:
    """A day with nothing of its own to write: only what traces bring."""
    return Day(
        name="2023-11-14",
        folder=Path("2023-11-14"),
        pods=[PodMetrics("ledger-gateway-6f6cfc45b-d9pnv")],
        entry={},
        edges=[],
        edge_latency={},
        faults=[],
    )


def span_calls_lines(text_by_file: dict[str, str], shift: timedelta = timedelta(0)) -> list[str]:
    traces = trace_minutes(iter(text_by_file.items()))
    lines = day_openmetrics(one_pod_day(), namespace="ledger", shift=shift, traces=traces)
    return [line for line in lines if "spanmetrics" in line]


def test_the_span_metrics_counter_is_cumulative_and_carried_through_covered_minutes_without_spans():
    # Minute 0: both operations; minute 1: only the gateway's; minute 2: no span file; minute 3: the store's.
    first = span_file(
        [
            ("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 100),
            ("b", "root", "ledger-gateway-6f6cfc45b-d9pnv", 61_000, 61_100),
        ]
    )
    later = span_file(
        [
            ("c", "root", "ledger-store-5b67c48447-mv5hb", 180_000, 180_100),
            ("d", "c", "ledger-store-5b67c48447-mv5hb", 180_010, 180_050),
        ],
        operations={"c": "Store.Read", "d": "Store.Read"},
    )

    lines = span_calls_lines({"08_44_trace.csv": first, "08_47_trace.csv": later})

    def at(index: int) -> str:
        return f"{MINUTE // 10**9 + 60 * index + 59:.3f}"

    gateway = 'namespace="ledger",service="ledger-gateway",span_name="op"'
    store = 'namespace="ledger",service="ledger-store",span_name="Store.Read"'
    assert lines == [
        "# TYPE traces_spanmetrics_calls counter",
        f"# HELP traces_spanmetrics_calls {SPAN_CALLS.help}",
        f"traces_spanmetrics_calls_total{{{gateway}}} 1.0 {at(0)}",
        f"traces_spanmetrics_calls_total{{{gateway}}} 2.0 {at(1)}",
        f"traces_spanmetrics_calls_total{{{gateway}}} 2.0 {at(3)}",
        f"traces_spanmetrics_calls_total{{{store}}} 0.0 {at(0)}",
        f"traces_spanmetrics_calls_total{{{store}}} 0.0 {at(1)}",
        f"traces_spanmetrics_calls_total{{{store}}} 2.0 {at(3)}",
    ]


def test_a_span_name_with_spaces_and_quotes_is_escaped_and_the_samples_shifted_with_the_day():
    text = span_file(
        [("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 100)],
        operations={"a": 'POST /ledger/{id} "draft"'},
    )

    [sample] = span_calls_lines({"08_44_trace.csv": text}, shift=timedelta(hours=1))[2:]

    assert sample == (
        'traces_spanmetrics_calls_total{namespace="ledger",service="ledger-gateway",'
        f'span_name="POST /ledger/{{id}} \\"draft\\""}} 1.0 {MINUTE // 10**9 + 3600 + 59:.3f}'
    )


def test_the_metadata_describes_the_span_metrics_only_when_the_traces_have_operations():
    text = span_file([("a", "root", "ledger-gateway-6f6cfc45b-d9pnv", 0, 100)])

    with_spans = day_families(one_pod_day(), traces=trace_minutes(iter([("08_44_trace.csv", text)])))
    without = day_families(one_pod_day(), traces=trace_minutes(iter([])))

    assert SPAN_CALLS in with_spans
    assert SPAN_CALLS.type == "counter" and "span metrics" in SPAN_CALLS.help
    assert SPAN_CALLS not in without
    assert SPAN_CALLS not in day_families(one_pod_day())


# Around a case read from 03:32:07 to 04:07:07: the file named 04_08 holds the minute before 04:08.
NAMES = ["03_31_trace.csv", "03_32_trace.csv", "04_08_trace.csv", "04_09_trace.csv", "xx_yy_trace.csv"]
CASE_START = datetime(2022, 8, 22, 3, 32, 7, tzinfo=UTC)
CASE_END = datetime(2022, 8, 22, 4, 7, 7, tzinfo=UTC)


def day_folder(root: Path) -> None:
    """`rca_data/2022-08-22/trace` under root: a file of each of `NAMES` and one that is no span file;
    `construct_data/2022-08-22/trace`: the day's fault-free capture, inside the window and after it."""
    folder = root / "rca_data" / "2022-08-22" / "trace"
    folder.mkdir(parents=True)
    for name in [*NAMES, "03_40_log.csv"]:
        (folder / name).write_text(f"{name}\n", encoding="utf-8")
    normal = root / "construct_data" / "2022-08-22" / "trace"
    normal.mkdir(parents=True)
    for name in ("03_51_trace.csv", "05_00_trace.csv"):
        (normal / name).write_text(f"normal {name}\n", encoding="utf-8")


@pytest.mark.parametrize("as_git", [False, True], ids=["folder", "git"])
def test_a_case_reads_only_the_span_files_named_in_its_window_and_the_minute_after(tmp_path, as_git):
    day_folder(tmp_path)
    repository = tmp_path
    if as_git:
        git = ["git", "-C", str(tmp_path), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
        for arguments in (
            ["init", "-q"],
            ["add", "rca_data", "construct_data"],
            ["commit", "-q", "-m", "day"],
        ):
            subprocess.run([*git, *arguments], check=True)
        repository = tmp_path / ".git"

    files = list(trace_files_between(repository, "2022-08-22", CASE_START, CASE_END))

    assert files == [
        ("03_32_trace.csv", "03_32_trace.csv\n"),
        ("03_51_trace.csv", "normal 03_51_trace.csv\n"),
        ("04_08_trace.csv", "04_08_trace.csv\n"),
    ]


def test_the_day_is_read_beside_its_fault_free_capture_when_given_the_rca_data_folder_itself(tmp_path):
    day_folder(tmp_path)

    names = [name for name, _ in trace_files(tmp_path / "rca_data", "2022-08-22")]

    assert names == ["03_31_trace.csv", "03_32_trace.csv", "03_51_trace.csv", "04_08_trace.csv",
                     "04_09_trace.csv", "05_00_trace.csv", "xx_yy_trace.csv"]  # fmt: skip
