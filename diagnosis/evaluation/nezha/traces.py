"""The Nezha repository's per-minute span files (`rca_data/<day>/trace/*_trace.csv`, both systems, and
the day's fault-free capture, `construct_data/<day>/trace`) as Tempo's metrics-generator counts them,
per minute of a span's start:

- its span metrics: per service and operation (`OperationName`), how many spans began — every span,
  a root or one whose parent is in no file as well, once (neighbouring files overlap by seconds: a
  span both hold is counted from the first);
- its service graph: per edge between two services (a span whose parent span is in another service),
  the durations of the parent span (the call as its caller saw it, the histogram
  `traces_service_graph_request_client_seconds`) and of the child span (as the callee spent it,
  `traces_service_graph_request_server_seconds`); their difference is the time on the way between them.

Read where they lie, never copied into the repository: a folder holding `rca_data/` and
`construct_data/` (or `rca_data` itself, beside `construct_data`), or the repository's bare git
directory (its files read with `git show`), one file at a time.
The span files carry no status, so no failed-request series is written. A file holds about the minute
before the one it is named after, so the minutes at either end of a run of files are covered in part
(fewer spans); a minute in which no span began has no samples.
"""

from __future__ import annotations

import csv
import io
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import NamedTuple

from diagnosis.evaluation.nezha.data import NezhaDataError, service_of_pod

TRACE_FOLDER = "trace"
TRACE_SUFFIX = "_trace.csv"
# The repository's folders of a day's files: around each injection, and the fault-free capture.
RCA_FOLDER = "rca_data"
DATA_FOLDERS = (RCA_FOLDER, "construct_data")
# Tempo lets the buckets be configured; doubling from 1 ms keeps a ×2 change visible.
BUCKETS = tuple(0.001 * 2**k for k in range(15))
MINUTE_NS = 60 * 10**9
# A span (or log) file holds up to a minute (and some seconds) before the minute it is named after.
FILE_REACH = timedelta(minutes=1)
COLUMNS = (
    "TraceID",
    "SpanID",
    "ParentID",
    "PodName",
    "OperationName",
    "StartTimeUnixNano",
    "EndTimeUnixNano",
)


Minutes = dict[tuple[str, str], dict[datetime, list[float]]]
Counts = dict[tuple[str, str], dict[datetime, int]]


@dataclass
class TraceMinutes:
    """Per minute: per (client, server) service pair, the durations (seconds) of the server spans and
    of their parents, the client spans; per (service, operation), how many spans began."""

    durations: Minutes = field(default_factory=dict)
    client_durations: Minutes = field(default_factory=dict)
    operations: Counts = field(default_factory=dict)


def trace_files(repository: Path, day: str) -> Iterator[tuple[str, str]]:
    """(name, text) of each span file of the day, in name order (an empty iterator if none)."""
    return day_files(repository, day, folder=TRACE_FOLDER, suffix=TRACE_SUFFIX)


def trace_files_between(
    repository: Path, day: str, start: datetime, end: datetime
) -> Iterator[tuple[str, str]]:
    """(name, text) of the day's span files holding spans that began between `start` and `end` (UTC),
    in name order; the others are not read."""
    wanted = named_between(day, start, end)
    return day_files(repository, day, folder=TRACE_FOLDER, suffix=TRACE_SUFFIX, wanted=wanted)


def named_between(day: str, start: datetime, end: datetime) -> Callable[[str], bool]:
    """Whether a file of the day, by its name, holds what happened between `start` and `end` (UTC):
    a file `HH_MM` (spans or log lines) holds the minute before HH:MM and a few seconds after it."""
    first, last = start.replace(second=0, microsecond=0), end + FILE_REACH

    def wanted(name: str) -> bool:
        minute = _file_minute(day, name)
        return minute is not None and first <= minute < last

    return wanted


def day_files(
    repository: Path, day: str, *, folder: str, suffix: str, wanted: Callable[[str], bool] = lambda _: True
) -> Iterator[tuple[str, str]]:
    """(name, text) of each file of the day's `folder` ending in `suffix` whose name is `wanted`, in
    name order: the injections' (`rca_data/<day>`) and the day's fault-free capture
    (`construct_data/<day>`, a few minutes between two injections that Nezha learns the normal from)."""
    if (repository / "objects").is_dir() and (repository / "HEAD").is_file():
        listed = [
            (name, f"{top}/{day}/{folder}/{name}")
            for top in DATA_FOLDERS
            for name in _git_names(repository, f"{top}/{day}/{folder}")
        ]
        for name, path in sorted(listed):
            if name.endswith(suffix) and wanted(name):
                text = _git(repository, "show", f"HEAD:{path}")
                # A file the snapshot lists without its content (the largest ones) is left out.
                if text is not None:
                    yield name, text
        return
    # The repository's folder, or its `rca_data` folder (the rest of the repository beside it).
    rca = repository / RCA_FOLDER if (repository / RCA_FOLDER).is_dir() else repository
    tops = [rca, *(rca.parent / top for top in DATA_FOLDERS if top != RCA_FOLDER)]
    paths = [path for top in tops for path in (top / day / folder).glob(f"*{suffix}")]
    for path in sorted(paths, key=lambda path: path.name):
        if wanted(path.name):
            yield path.name, path.read_text(encoding="utf-8")


def _file_minute(day: str, name: str) -> datetime | None:
    """The minute a file is named after (`04_02_trace.csv` on its day, UTC); None for another name."""
    try:
        return datetime.strptime(f"{day} {name[:5]}", "%Y-%m-%d %H_%M").replace(tzinfo=UTC)
    except ValueError:
        return None


def trace_minutes(files: Iterable[tuple[str, str]], *, edges: bool = True) -> TraceMinutes:
    """The spans of the files, one file at a time (a parent is looked for in its child's file); with
    `edges` false, only the operations are counted (no file's spans are kept to find parents)."""
    traces = TraceMinutes()
    # Neighbouring files overlap by a few seconds (up to half a minute's spans are in both): a span the
    # file before holds too is counted once, as Tempo counts it (the edges, read per file, keep both).
    before: set[tuple[str, str]] = set()
    for name, text in files:
        rows = csv.reader(io.StringIO(text))
        header = next(rows, [])
        at = span_columns(name, header)
        # A short row (a blank line, a file cut off) is no span.
        whole = (row for row in rows if len(row) == len(header))
        spans = list(whole) if edges else whole
        held = set()
        for row in spans:
            key = (row[at.trace], row[at.span])
            held.add(key)
            if key not in before:
                counts = traces.operations.setdefault((service_of_pod(row[at.pod]), row[at.operation]), {})
                minute = _minute(int(row[at.start]))
                counts[minute] = counts.get(minute, 0) + 1
        before = held
        if edges:
            _edges_added(traces, spans, at)
    return traces


class SpanColumns(NamedTuple):
    """Where each of `COLUMNS` is in a span file's rows."""

    trace: int
    span: int
    parent: int
    pod: int
    operation: int
    start: int
    end: int


def span_columns(name: str, header: list[str]) -> SpanColumns:
    """The positions of the span columns in the file `name` with this header row."""
    if missing := [column for column in COLUMNS if column not in header]:
        raise NezhaDataError(f"{name} 缺少列：{', '.join(missing)}")
    return SpanColumns(*(header.index(column) for column in COLUMNS))


def _edges_added(traces: TraceMinutes, spans: list[list[str]], at: SpanColumns) -> None:
    by_id = {row[at.span]: row for row in spans}
    for row in spans:
        parent = by_id.get(row[at.parent])
        server = service_of_pod(row[at.pod])
        if parent is None or (client := service_of_pod(parent[at.pod])) == server:
            continue
        minute = _minute(int(row[at.start]))
        for minutes, span in ((traces.durations, row), (traces.client_durations, parent)):
            seconds = (int(span[at.end]) - int(span[at.start])) / 1e9
            minutes.setdefault((client, server), defaultdict(list))[minute].append(seconds)


@cache
def _minute_at(index: int) -> datetime:
    return datetime.fromtimestamp(index * 60, tz=UTC)


def _minute(unix_nano: int) -> datetime:
    """The minute a span began (its start's whole minute)."""
    return _minute_at(unix_nano // MINUTE_NS)


def _git_names(git_dir: Path, folder: str) -> list[str]:
    listed = _git(git_dir, "ls-tree", "--name-only", f"HEAD:{folder}")
    return listed.splitlines() if listed is not None else []


def _git(git_dir: Path, *arguments: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", f"--git-dir={git_dir}", *arguments], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as error:
        raise NezhaDataError("读取 Nezha 仓库需要 git") from error
    return done.stdout if done.returncode == 0 else None
