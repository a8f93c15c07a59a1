"""The Nezha repository's span files as Tempo stores them: each span once, its service the pod's,
shifted like the metrics, served by the Tempo stand-in (`diagnosis.evaluation.tempo`) so an
investigation reads traces as it would from Tempo.

A case serves only the files of its own read window (`traces.trace_files_between`): a day's files
are up to a few hundred megabytes of spans, more than a case needs and more than it should hold.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from diagnosis.evaluation.nezha.data import service_of_pod
from diagnosis.evaluation.nezha.traces import span_columns
from diagnosis.evaluation.tempo import TempoServer, TempoSpan

# How the span files mark a span without a parent.
ROOT_PARENTS = ("root", "")


def tempo_spans(files: Iterable[tuple[str, str]], *, shift: timedelta) -> list[TempoSpan]:
    """Every span of the files once, each `shift` later; a file is read, then let go."""
    shifted = int(shift.total_seconds()) * 10**9
    # Neighbouring files overlap by seconds: a span already read is not repeated.
    seen: set[tuple[str, str]] = set()
    # One string per distinct value, not one per row: a trace's id, a pod's service and an operation
    # repeat across thousands of rows (a case's spans take two fifths less memory).
    shared: dict[str, str] = {}
    service_of: dict[str, str] = {}
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
            spans.append(
                TempoSpan(
                    trace_id=trace_id,
                    span_id=span_id,
                    parent_id="" if parent in ROOT_PARENTS else parent,
                    service=service_of[pod],
                    operation=shared.setdefault(operation, operation),
                    start_ns=int(row[at.start]) + shifted,
                    end_ns=int(row[at.end]) + shifted,
                )
            )
    return spans


@contextmanager
def spans_served(spans: list[TempoSpan]) -> Iterator[str | None]:
    """A Tempo stand-in over the spans on a loopback port, its URL; None when there are none."""
    if not spans:
        yield None
        return
    with TempoServer(spans) as server:
        yield server.url
