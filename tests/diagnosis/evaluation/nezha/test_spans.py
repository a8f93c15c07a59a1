"""The span files as Tempo holds them: each span once though neighbouring files overlap, its service
the pod's, a root without a parent, shifted like the metrics; served by the Tempo stand-in."""

import csv
import io
from datetime import timedelta

import httpx2
import pytest

from diagnosis.evaluation.nezha.data import NezhaDataError
from diagnosis.evaluation.nezha.spans import spans_served, tempo_spans
from diagnosis.evaluation.nezha.traces import COLUMNS
from diagnosis.evaluation.tempo import TempoSpan

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
