"""TrainTicket's traces (the Nezha repository's per-minute span files, `rca_data/<day>/trace/*.csv`)
as Tempo's metrics-generator exposes them: per edge between two services (a span whose parent span is
in another service), the histograms `traces_service_graph_request_client_seconds`
of the parent span's duration (the call as its caller saw it) and `traces_service_graph_request_server_seconds`
of the child span's (as the callee spent it); their difference is the time on the way between them.

Read where they lie, never copied into the repository: a folder holding `rca_data/` (or `rca_data`
itself), or the repository's bare git directory (its files read with `git show`). The span files
carry no status, so no failed-request series is written. Minutes without a span file have no samples.
"""

from __future__ import annotations

import csv
import io
import subprocess
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from diagnosis.evaluation.nezha.data import NezhaDataError, service_of_pod

TRACE_FOLDER = "trace"
TRACE_SUFFIX = "_trace.csv"
# Tempo lets the buckets be configured; doubling from 1 ms keeps a ×2 change visible.
BUCKETS = tuple(0.001 * 2**k for k in range(15))
MINUTE_NS = 60 * 10**9


Minutes = dict[tuple[str, str], dict[datetime, list[float]]]


@dataclass
class EdgeMinutes:
    """Per (client, server) service pair, per minute: the durations (seconds) of the server spans and of
    their parents, the client spans."""

    durations: Minutes = field(default_factory=dict)
    client_durations: Minutes = field(default_factory=dict)


def trace_files(repository: Path, day: str) -> Iterator[tuple[str, str]]:
    """(name, text) of each span file of the day, in name order (an empty iterator if none)."""
    return day_files(repository, day, folder=TRACE_FOLDER, suffix=TRACE_SUFFIX)


def day_files(repository: Path, day: str, *, folder: str, suffix: str) -> Iterator[tuple[str, str]]:
    """(name, text) of each file of the day's `folder` ending in `suffix`, in name order."""
    if (repository / "objects").is_dir() and (repository / "HEAD").is_file():
        yield from _git_files(repository, f"rca_data/{day}/{folder}", suffix=suffix)
        return
    root = repository / "rca_data" if (repository / "rca_data").is_dir() else repository
    for path in sorted((root / day / folder).glob(f"*{suffix}")):
        yield path.name, path.read_text(encoding="utf-8")


def edge_minutes(files: Iterator[tuple[str, str]]) -> EdgeMinutes:
    edges = EdgeMinutes()
    for _, text in files:
        rows = list(csv.DictReader(io.StringIO(text)))
        span = {row["SpanID"]: row for row in rows}
        for row in rows:
            parent = span.get(row["ParentID"])
            server = service_of_pod(row["PodName"])
            if parent is None or (client := service_of_pod(parent["PodName"])) == server:
                continue
            started = int(row["StartTimeUnixNano"])
            minute = datetime.fromtimestamp(started // MINUTE_NS * 60, tz=UTC)
            for minutes, seconds in (
                (edges.durations, _seconds(row)),
                (edges.client_durations, _seconds(parent)),
            ):
                minutes.setdefault((client, server), defaultdict(list))[minute].append(seconds)
    return edges


def _seconds(row: dict[str, str]) -> float:
    return (int(row["EndTimeUnixNano"]) - int(row["StartTimeUnixNano"])) / 1e9


def _git_files(git_dir: Path, folder: str, *, suffix: str) -> Iterator[tuple[str, str]]:
    listed = _git(git_dir, "ls-tree", "--name-only", f"HEAD:{folder}")
    if listed is None:
        return
    for name in sorted(n for n in listed.splitlines() if n.endswith(suffix)):
        text = _git(git_dir, "show", f"HEAD:{folder}/{name}")
        # A file the snapshot lists without its content (the largest ones) is left out.
        if text is not None:
            yield name, text


def _git(git_dir: Path, *arguments: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", f"--git-dir={git_dir}", *arguments], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as error:
        raise NezhaDataError("读取 Nezha 仓库需要 git") from error
    return done.stdout if done.returncode == 0 else None
