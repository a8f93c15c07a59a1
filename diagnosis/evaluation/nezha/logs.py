"""The Nezha repository's per-minute log files (`rca_data/<day>/log/*_log.csv`: TrainTicket's, and the
OnlineBoutique ones the repository keeps; with the day's fault-free capture, `construct_data/<day>/log`)
as Loki streams, shifted like the metrics.

Each row is one container line: `TimeUnixNano`, `PodName` and `Log`, the container runtime's JSON
(`{"log": "<line>\\n", "stream": …}`). A stream is labelled as a Kubernetes log shipper labels one:
`namespace`, `service` (the pod's service), `pod`, and `level` where the line states one. The files
cover a few minutes around each injection, so most of the day has no line at all; neighbouring files
overlap by up to a minute, and a line two files hold is one line, as Loki keeps one entry of a stream
with the same time and line. A case's files are read again for the Tempo stand-in (`spans`): a line
with a trace and span id is an event of that span.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from diagnosis.evaluation.loki import LokiServer, Stream
from diagnosis.evaluation.nezha.data import service_of_pod
from diagnosis.evaluation.nezha.traces import day_files, named_between
from tools.loglines import level_of

LOG_FOLDER = "log"
LOG_SUFFIX = "_log.csv"
# A plain line states its level at its head; its tail (a logged response body, kilobytes) is not read.
LEVEL_HEAD = 200


def log_streams(files: Iterable[tuple[str, str]], *, namespace: str, shift: timedelta) -> list[Stream]:
    """The files' lines as streams `[(labels, [(ns, line)])]`, each line `shift` later."""
    shifted = int(shift.total_seconds()) * 10**9
    streams: dict[tuple[tuple[str, str], ...], list[tuple[int, str]]] = {}
    seen: set[tuple[str, int, str]] = set()
    for _, text in files:
        for row in csv.DictReader(io.StringIO(text)):
            pod, raw = row.get("PodName") or "", row.get("Log") or ""
            try:
                at = int(row["TimeUnixNano"])
            except (KeyError, TypeError, ValueError):
                continue
            line = container_line(raw)
            if not pod or not line or (pod, at, line) in seen:
                continue
            seen.add((pod, at, line))
            labels = {"namespace": namespace, "service": service_of_pod(pod), "pod": pod}
            if level := level_of(line if line.startswith("{") else line[:LEVEL_HEAD]):
                labels["level"] = level.lower()
            streams.setdefault(tuple(sorted(labels.items())), []).append((at + shifted, line))
    return [(dict(labels), lines) for labels, lines in streams.items()]


def log_files(repository: Path, day: str) -> Iterator[tuple[str, str]]:
    """(name, text) of each log file of the day the repository has, in name order."""
    return day_files(repository, day, folder=LOG_FOLDER, suffix=LOG_SUFFIX)


def log_files_between(
    repository: Path, day: str, start: datetime, end: datetime
) -> Iterator[tuple[str, str]]:
    """(name, text) of the day's log files holding lines written between `start` and `end` (UTC), in
    name order, by the span files' rule (`traces.named_between`); the others are not read."""
    wanted = named_between(day, start, end)
    return day_files(repository, day, folder=LOG_FOLDER, suffix=LOG_SUFFIX, wanted=wanted)


@contextmanager
def logs_served(streams: list[Stream]) -> Iterator[str | None]:
    """A Loki stand-in over the streams on a loopback port, its URL; None when there are none."""
    if not streams:
        yield None
        return
    with LokiServer(streams) as server:
        yield server.url


def container_line(raw: str) -> str:
    """The line a container wrote, from the runtime's JSON record (the raw text if it is none)."""
    try:
        record = json.loads(raw)
    except ValueError:
        return raw.strip()
    return str(record.get("log", "")).rstrip("\n") if isinstance(record, dict) else raw.strip()
