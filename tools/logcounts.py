"""Log lines counted by what their format says (`tools.logformats`), Django-free: slow lines (a
duration above a threshold) with the slowest, access lines by path or by status, error lines by class.

`CountRequest` says what is counted. `counted_in_code` counts lines a source holds (the demo world's,
an evaluation case's, the newest lines Loki served for formats LogQL cannot read); the Loki source
counts the whole window with LogQL metric queries where a line's format has a recipe (`tools.logql`).
Each count is one record of the `count_logs` tool in its stored shape (`LogCount`): the total first
(no group), then the groups, most lines first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from tools.logformats import LineFields, fields_of
from tools.loglines import is_error_level, patterns_mined

Measure = Literal["slow", "path", "status", "class"]
MEASURES: tuple[Measure, ...] = ("slow", "path", "status", "class")
# The most groups a count lists (paths, statuses, classes); the total counts them all.
MAX_GROUPS = 10
# How a count was made: over every line of the window (LogQL, or a source that holds them all), or
# over the newest lines a source served (`sample:<n>`).
WINDOW = "window"


def exact(number: Decimal) -> str:
    """A duration as its line wrote it, in plain digits (`1902.019`, `60001`): never rounded, so the
    count says the number the quoted line says."""
    return f"{number.normalize():f}"


def sample_of(lines: int) -> str:
    return f"sample:{lines}"


@dataclass(frozen=True)
class CountRequest:
    measure: Measure
    minutes: int
    service: str = ""
    # An HTTP status (`404`) or class (`5xx`) for path and status counts; "" for any.
    status: str = ""
    slower_than_ms: Decimal = Decimal(1000)

    def wants_status(self, status: str) -> bool:
        if not status:
            return False
        if not self.status:
            return True
        if self.status.lower().endswith("xx"):
            return status[0] == self.status[0]
        return status == self.status

    def record(
        self, *, group: dict[str, str], count: int, counted_over: str, query: str = "", **more
    ) -> dict:
        """One count in the stored shape of `LogCount`."""
        return {
            "service": self.service,
            "measure": self.measure,
            "status": self.status,
            "slower_than_ms": exact(self.slower_than_ms),
            "minutes": self.minutes,
            "group": group,
            "count": count,
            **more,
            "query": query,
            "counted_over": counted_over,
        }


@dataclass(frozen=True)
class Line:
    """A line as a source has it: its text and its level (from its labels or its text)."""

    message: str
    level: str = ""

    @property
    def fields(self) -> LineFields:
        return fields_of(self.message)


def counted_in_code(lines: Sequence[Line], request: CountRequest, *, counted_over: str) -> list[dict]:
    """The counts of the lines given (newest first): the total, then each group with its newest line."""
    if request.measure == "slow":
        return slow_counted(lines, request, counted_over=counted_over)
    if request.measure == "class":
        errors = [line for line in lines if is_error_level(line.level)]
        names = classes_of(errors)
        grouped = [({"class": name}, line) for name, line in zip(names, errors, strict=True)]
    else:
        grouped = [
            ({request.measure: getattr(line.fields, request.measure)}, line)
            for line in lines
            if line.fields.path and request.wants_status(line.fields.status)
        ]
    return groups_counted(grouped, request, counted_over=counted_over)


def slow_counted(lines: Sequence[Line], request: CountRequest, *, counted_over: str) -> list[dict]:
    """One record: how many lines took longer than the threshold, the slowest and its line."""
    slow = [
        (line.fields.duration_ms, line)
        for line in lines
        if line.fields.duration_ms is not None and line.fields.duration_ms > request.slower_than_ms
    ]
    if not slow:
        return []
    duration, slowest = max(slow, key=lambda pair: pair[0])
    return [
        request.record(
            group={},
            count=len(slow),
            slowest_ms=exact(duration),
            line=slowest.message,
            counted_over=counted_over,
        )
    ]


def groups_counted(
    grouped: Sequence[tuple[dict[str, str], Line]], request: CountRequest, *, counted_over: str
) -> list[dict]:
    """The total, then the groups (most lines first, at most MAX_GROUPS), each with its first line."""
    if not grouped:
        return []
    counts: dict[tuple, list] = {}
    for group, line in grouped:
        key = tuple(group.items())
        counts.setdefault(key, [group, 0, line])[1] += 1
    ordered = sorted(counts.values(), key=lambda item: (-item[1], sorted(item[0].items())))
    total = request.record(group={}, count=len(grouped), counted_over=counted_over)
    return [
        total,
        *(
            request.record(group=group, count=count, line=line.message, counted_over=counted_over)
            for group, count, line in ordered[:MAX_GROUPS]
        ),
    ]


def classes_of(lines: Sequence[Line]) -> list[str]:
    """Each error line's class: what its format names (a SQLSTATE class, a failed call and its errno,
    an exception's class, an error-type key), else the template of its message (the line after its
    format's prefix) among the lines without one."""
    named = [line.fields.error_class for line in lines]
    unnamed = [i for i, name in enumerate(named) if not name]
    messages = [lines[i].fields.message or lines[i].message for i in unnamed]
    for pattern in patterns_mined(messages):
        for member in pattern.members:
            named[unnamed[member]] = pattern.template
    return named


@dataclass(frozen=True)
class LogCounts:
    """What a source answers a count with: the records (`LogCount`'s stored shape) and the queries it
    sent (LogQL), in order."""

    records: list[dict]
    queries: tuple[str, ...] = ()


def counts_merged(parts: Sequence[list[dict]], request: CountRequest) -> list[dict]:
    """The counts of several parts (one per format, LogQL or counted in code) as one answer: the totals
    added, each group's counts added (most lines first, at most MAX_GROUPS), the slowest kept; each
    record names every query it adds up and says a sample when any of its parts was one."""
    totals = [part[0] for part in parts if part]
    if not totals:
        return []
    merged = [_added(totals, request)]
    groups: dict[tuple, list[dict]] = {}
    for part in parts:
        for record in part[1:]:
            groups.setdefault(tuple(record["group"].items()), []).append(record)
    added = sorted((_added(records, request) for records in groups.values()), key=_larger_first)
    return [*merged, *added[:MAX_GROUPS]]


def _added(records: list[dict], request: CountRequest) -> dict:
    slowest = max(
        (record for record in records if record.get("slowest_ms")),
        key=lambda record: Decimal(record["slowest_ms"]),
        default=None,
    )
    samples = [record["counted_over"] for record in records if record["counted_over"] != WINDOW]
    more = {"slowest_ms": slowest["slowest_ms"], "line": slowest.get("line", "")} if slowest else {}
    if not slowest and (line := next((r["line"] for r in records if r.get("line")), "")):
        more = {"line": line}
    return request.record(
        group=records[0]["group"],
        count=sum(record["count"] for record in records),
        query="；".join(record["query"] for record in records if record["query"]),
        counted_over=samples[0] if samples else WINDOW,
        **more,
    )


def _larger_first(record: dict) -> tuple:
    return -record["count"], sorted(record["group"].items())
