"""The span files as Tempo holds them: each span once though neighbouring files overlap, its service
the pod's, a root without a parent, shifted like the metrics; the log lines written in a span its
events, with the code place a logback line states; served by the Tempo stand-in."""

import csv
import io
import json
from datetime import timedelta

import httpx2
import pytest

from diagnosis.evaluation.nezha.data import NezhaDataError
from diagnosis.evaluation.nezha.spans import spans_served, tempo_spans
from diagnosis.evaluation.nezha.traces import COLUMNS
from diagnosis.evaluation.tempo import SpanEvent, TempoSpan

NS = 10**9
START = 1_700_000_040 * NS
# The files' columns, and one the reader does not need.
HEADER = [*COLUMNS, "Duration"]


def span_file(rows: list[tuple[str, str, str, str, str, int]], *, header: list[str] = HEADER) -> str:
    """A span file of (trace, span, parent, pod, operation, start seconds after START), a second each."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    for trace, span, parent, pod, operation, seconds in rows:
        start = START + seconds * NS
        writer.writerow([trace, span, parent, pod, operation, start, start + NS, 1_000_000])
    return out.getvalue()


def log_file(rows: list[tuple[int, str, str, str, str]]) -> str:
    """A log file of (ns after START, pod, trace, span, line), each line in the container runtime's JSON."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Timestamp", "TimeUnixNano", "Node", "PodName", "Container", "TraceID", "SpanID", "Log"])
    for ns, pod, trace, span, line in rows:
        record = json.dumps({"log": line + "\n", "stream": "stdout", "time": "2023-11-14T22:34:00Z"})
        writer.writerow(["2023-11-14T22:34:00Z", START + ns, "10.0.0.1", pod, "server", trace, span, record])
    return out.getvalue()


GATE = "quarry-gate-6f6cfc45b-d9pnv"
MILL = "quarry-mill-5b67c48447-mv5hb"
# A trace through the gate and the mill.
STONE = span_file([
    ("t1", "s1", "root", GATE, "GET /stone", 0),
    ("t1", "s2", "s1", MILL, "Mill.Cut", 1),
])  # fmt: skip
CUT = "16:52:28.243 INFO  q.s.MillServiceImpl#532 TraceID: t1 SpanID: s2 [cut][Cut stone][Size: 3]"
BLUNT = "16:52:28.301 WARN  q.s.MillServiceImpl#540 TraceID: t1 SpanID: s2 [cut][Blade blunt]"


def test_a_log_line_is_an_event_of_its_span_with_its_message_and_code_place_in_time_order_shifted():
    logs = log_file([
        (1 * NS + 300, MILL, "t1", "s2", BLUNT),
        (1 * NS + 200, MILL, "t1", "s2", CUT),
    ])  # fmt: skip

    spans = tempo_spans(
        [("08_44_trace.csv", STONE)], shift=timedelta(seconds=10), logs=[("08_44_log.csv", logs)]
    )

    gate, mill = spans
    assert gate.events == ()
    place = ("code.namespace", "q.s.MillServiceImpl")
    assert mill.events == (
        SpanEvent(START + 11 * NS + 200, "log", (("message", CUT), place, ("code.lineno", 532))),
        SpanEvent(START + 11 * NS + 300, "log", (("message", BLUNT), place, ("code.lineno", 540))),
    )


def test_a_line_stating_no_code_place_has_only_its_message():
    plain = "Servlet.service() for servlet [dispatcherServlet] threw exception"
    logs = log_file([(0, GATE, "t1", "s1", plain)])

    [gate, _] = tempo_spans([("08_44_trace.csv", STONE)], shift=timedelta(0), logs=[("08_44_log.csv", logs)])

    assert gate.events == (SpanEvent(START, "log", (("message", plain),)),)


def test_a_line_of_no_span_read_or_without_ids_is_left_out():
    logs = log_file([
        (0, GATE, "t1", "lost", "16:52:27.100 INFO  q.c.GateController#48 [get][Get stone]"),
        (0, GATE, "t9", "s1", "16:52:27.100 INFO  q.c.GateController#48 [get][Get stone]"),
        (0, GATE, "", "", "16:52:27.000 INFO  q.Application#61 Started Application in 9.1 seconds"),
    ])  # fmt: skip

    spans = tempo_spans([("08_44_trace.csv", STONE)], shift=timedelta(0), logs=[("08_44_log.csv", logs)])

    assert [span.events for span in spans] == [(), ()]


def test_a_line_two_overlapping_log_files_hold_is_one_event_and_the_same_line_later_is_another():
    earlier = log_file([(1 * NS, MILL, "t1", "s2", CUT), (1 * NS + 5, MILL, "t1", "s2", CUT)])
    later = log_file([(1 * NS + 5, MILL, "t1", "s2", CUT), (1 * NS + 9, MILL, "t1", "s2", CUT)])

    [_, mill] = tempo_spans(
        [("08_44_trace.csv", STONE)],
        shift=timedelta(0),
        logs=[("08_44_log.csv", earlier), ("08_45_log.csv", later)],
    )

    assert [event.time_ns - START for event in mill.events] == [1 * NS, 1 * NS + 5, 1 * NS + 9]


def test_a_span_is_its_pods_service_with_no_parent_for_a_root_and_shifted():
    text = span_file([
        ("t1", "s1", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 0),
        ("t1", "s2", "s1", "quarry-mill-5b67c48447-mv5hb", "Mill.Cut", 1),
        ("t2", "s3", "", "quarry-gate-6f6cfc45b-x7k2p", "GET /stone", 2),
    ])  # fmt: skip

    spans = tempo_spans([("08_44_trace.csv", text)], shift=timedelta(hours=1))

    hour = 3600 * NS
    assert spans == [
        TempoSpan("t1", "s1", "", "quarry-gate", "GET /stone", START + hour, START + hour + NS),
        TempoSpan("t1", "s2", "s1", "quarry-mill", "Mill.Cut", START + hour + NS, START + hour + 2 * NS),
        TempoSpan("t2", "s3", "", "quarry-gate", "GET /stone", START + hour + 2 * NS, START + hour + 3 * NS),
    ]


def test_a_span_neighbouring_files_both_hold_is_read_once():
    first = span_file([
        ("t1", "s1", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 0),
        ("t2", "s2", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 59),
    ])  # fmt: skip
    second = span_file([
        ("t2", "s2", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 59),
        ("t2", "s3", "s2", "quarry-mill-5b67c48447-mv5hb", "Mill.Cut", 60),
    ])  # fmt: skip

    spans = tempo_spans([("08_44_trace.csv", first), ("08_45_trace.csv", second)], shift=timedelta(0))

    assert [(span.trace_id, span.span_id) for span in spans] == [("t1", "s1"), ("t2", "s2"), ("t2", "s3")]


def test_a_short_row_is_no_span():
    text = span_file([("t1", "s1", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 0)])

    spans = tempo_spans([("08_44_trace.csv", text + "t1,s2,s1\n\n")], shift=timedelta(0))

    assert [span.span_id for span in spans] == ["s1"]


def test_a_file_without_a_span_column_is_refused_naming_the_file_and_the_column():
    text = span_file([], header=[column for column in HEADER if column != "ParentID"])

    with pytest.raises(NezhaDataError, match=r"08_44_trace\.csv.*ParentID"):
        tempo_spans([("08_44_trace.csv", text)], shift=timedelta(0))


def test_a_spans_lines_are_served_as_its_otlp_events():
    logs = log_file([(1 * NS + 200, MILL, "t1", "s2", CUT)])

    spans = tempo_spans([("08_44_trace.csv", STONE)], shift=timedelta(0), logs=[("08_44_log.csv", logs)])
    with spans_served(spans) as url:
        batches = httpx2.get(f"{url}/api/traces/t1").json()["batches"]

    served = {span["spanId"]: span for batch in batches for span in batch["scopeSpans"][0]["spans"]}
    assert "events" not in served["s1"]
    assert served["s2"]["events"] == [
        {
            "timeUnixNano": str(START + NS + 200),
            "name": "log",
            "attributes": [
                {"key": "message", "value": {"stringValue": CUT}},
                {"key": "code.namespace", "value": {"stringValue": "q.s.MillServiceImpl"}},
                {"key": "code.lineno", "value": {"intValue": "532"}},
            ],
        }
    ]


def test_the_spans_are_served_as_traces_and_none_is_no_server():
    text = span_file([
        ("t1", "s1", "root", "quarry-gate-6f6cfc45b-d9pnv", "GET /stone", 0),
        ("t1", "s2", "s1", "quarry-mill-5b67c48447-mv5hb", "Mill.Cut", 1),
    ])  # fmt: skip

    with spans_served(tempo_spans([("08_44_trace.csv", text)], shift=timedelta(0))) as url:
        found = httpx2.get(f"{url}/api/search", params={"start": START // NS, "end": START // NS + 60}).json()
    with spans_served([]) as none:
        assert none is None

    assert [(trace["traceID"], trace["rootServiceName"]) for trace in found["traces"]] == [
        ("t1", "quarry-gate")
    ]
