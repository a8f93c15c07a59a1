"""The Nezha benchmark's data as it is shipped (FSE'23, `IntelligentDDS/Nezha`, MIT): one folder a
day with per-pod metric CSVs, the entry service's latency, a call graph and the injected faults.

Read where it lies (never copied into the repository). The quirks its README lists are handled
here: metric time is the `Time` column (some `TimeStamp` cells are corrupt), an injection's time is
its `inject_time` read as UTC (some `inject_timestamp` values are local time), success rates that
were never collected are left out, and empty cells are gaps, not zeros.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

METRIC_SUFFIX = "_metric.csv"
ENTRY_FILE = "front_service.csv"
# OnlineBoutique's call graph (Nezha's own) and TrainTicket's (derived from traces, see the README).
GRAPH_FILES = ("metric/dependency.csv", "call_graph_from_traces.csv")
# Per-edge latency at the caller and at the callee (OnlineBoutique only); columns `client_server`.
EDGE_LATENCY_FILES = {"client": "metric/source_50.csv", "server": "metric/destination_50.csv"}
# `2022-08-22 03:51:19.607158889 +0000 UTC m=+0.113112869`: the wall time, UTC.
TIME = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.(\d+))?")
# A pod name is its service, its replica set's hash and its own suffix.
POD_SUFFIXES = 2
# A success rate of 0 in every row was never collected.
SUCCESS_COLUMNS = ("PodSuccessRate(%)", "SuccessRate(%)")


class NezhaDataError(ValueError):
    """The folder is not a Nezha day folder as shipped."""


@dataclass(frozen=True)
class Fault:
    day: str
    at: datetime
    pod: str
    kind: str

    @property
    def service(self) -> str:
        return service_of_pod(self.pod)

    @property
    def case_id(self) -> str:
        return f"{self.day}T{self.at:%H%M%S}"


@dataclass
class PodMetrics:
    pod: str
    # Column name → [(time, value)], rows in time order, empty cells left out.
    columns: dict[str, list[tuple[datetime, float]]] = field(default_factory=dict)

    @property
    def service(self) -> str:
        return service_of_pod(self.pod)


@dataclass
class Day:
    name: str
    folder: Path
    pods: list[PodMetrics]
    # The entry service's latency percentiles and success rate (the load generator's view).
    entry: dict[str, list[tuple[datetime, float]]]
    # (caller, callee) service pairs.
    edges: list[tuple[str, str]]
    # (client, server) → [(time, seconds)]: per-edge latency seen by the caller or the callee.
    edge_latency: dict[str, dict[tuple[str, str], list[tuple[datetime, float]]]]
    faults: list[Fault]

    @property
    def services(self) -> list[str]:
        return sorted({pod.service for pod in self.pods})

    @property
    def start(self) -> datetime:
        return min(points[0][0] for pod in self.pods for points in pod.columns.values() if points)

    @property
    def end(self) -> datetime:
        return max(points[-1][0] for pod in self.pods for points in pod.columns.values() if points)


def service_of_pod(pod: str) -> str:
    return pod.rsplit("-", POD_SUFFIXES)[0]


def day_read(folder: Path) -> Day:
    """One day folder (`rca_data/2022-08-22`): its pods' metrics, entry latency, graph and faults."""
    metric = folder / "metric"
    if not metric.is_dir():
        raise NezhaDataError(f"{folder} 不是 Nezha 的一天（缺少 metric/ 目录）")
    pods = [_pod_read(path) for path in sorted(metric.glob(f"*{METRIC_SUFFIX}"))]
    if not pods:
        raise NezhaDataError(f"{metric} 下没有 *{METRIC_SUFFIX} 文件")
    entry_path = metric / ENTRY_FILE
    return Day(
        name=folder.name,
        folder=folder,
        pods=pods,
        entry=_columns_read(entry_path) if entry_path.is_file() else {},
        edges=_edges_read(folder),
        edge_latency={
            side: _edge_latency_read(folder / name)
            for side, name in EDGE_LATENCY_FILES.items()
            if (folder / name).is_file()
        },
        faults=faults_read(folder),
    )


def faults_read(folder: Path) -> list[Fault]:
    path = folder / f"{folder.name}-fault_list.json"
    if not path.is_file():
        raise NezhaDataError(f"缺少故障清单 {path}")
    hours = json.loads(path.read_text(encoding="utf-8"))
    faults = [
        Fault(
            day=folder.name,
            # `inject_time` is UTC; `inject_timestamp` is local time on one day (README quirks).
            at=datetime.strptime(fault["inject_time"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC),
            pod=fault["inject_pod"],
            kind=fault["inject_type"],
        )
        for faults in hours.values()
        for fault in faults
    ]
    return sorted(faults, key=lambda fault: fault.at)


def _pod_read(path: Path) -> PodMetrics:
    return PodMetrics(pod=path.name.removesuffix(METRIC_SUFFIX), columns=_columns_read(path))


def _columns_read(path: Path) -> dict[str, list[tuple[datetime, float]]]:
    """Every numeric column of a per-minute CSV by the `Time` column; a success rate that is 0 in every
    row was never collected and is left out."""
    columns: dict[str, list[tuple[datetime, float]]] = {}
    for row in _rows(path):
        at = _time_of(row.get("Time") or row.get("time") or "")
        if at is None:
            continue
        for name, cell in row.items():
            value = _number(cell)
            if value is not None and name not in ("TimeStamp", "timestamp"):
                columns.setdefault(name, []).append((at, value))
    for name in SUCCESS_COLUMNS:
        if name in columns and all(value == 0 for _, value in columns[name]):
            del columns[name]
    return columns


def _edges_read(folder: Path) -> list[tuple[str, str]]:
    for name in GRAPH_FILES:
        path = folder / name
        if path.is_file():
            return list(
                dict.fromkeys(
                    (row["Source"].strip(), row["Target"].strip())
                    for row in _rows(path)
                    if row.get("Source") and row.get("Target")
                )
            )
    return []


def _edge_latency_read(path: Path) -> dict[tuple[str, str], list[tuple[datetime, float]]]:
    edges: dict[tuple[str, str], list[tuple[datetime, float]]] = {}
    for name, points in _columns_read(path).items():
        client, _, server = name.partition("_")
        if client and server:
            edges[(client, server)] = points
    return edges


def _rows(path: Path) -> Iterator[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def _time_of(cell: str) -> datetime | None:
    match = TIME.match(cell.strip())
    if match is None:
        return None
    at = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    fraction = match[2] or ""
    return at.replace(microsecond=int(fraction[:6].ljust(6, "0"))) if fraction else at


def _number(cell: str | None) -> float | None:
    try:
        value = float(cell) if cell not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None
