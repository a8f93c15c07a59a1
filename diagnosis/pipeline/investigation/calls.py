"""How an operation's calls moved, from a sample of traces (`query_trace_calls`): the share of its spans
that made each call, before the incident and in it, compared as two proportions.

A code fault changes the path a request takes before it changes any rate: an operation that stops
making a call (it returned early) or starts making one (an error path) while it still runs. Which
service that says something of:
- a call that appeared: the operation's own service (its code took a new path);
- calls that vanished (made by less than half as many of its spans): the service that answered just
  before them. An operation that still makes a call (at least a tenth of its spans did before, and at
  least half as many still do) but, of the spans that made it, far fewer go on to make the vanished
  calls, stopped after that answer: the callee answered so that the caller gave up (a wrong value
  returned, an exception passed back). Without such a call, the operation's own service.

Each share is one the gatekeeper computes again from the cited record (`TraceCallsRecord.share`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Protocol

from diagnosis.pipeline.investigation.change import Change
from tools.evidence.trace_calls.record import TraceCallsRecord

# The roles of its moves: an operation's own path changed (a call appeared, or vanished with nothing
# before it), and a callee answered just before its caller stopped going on.
TRACE_CALLS = "trace_calls"
ANSWERED_BEFORE = "trace_answered"
LABEL = "调用"
UNIT = "share"
# Spans an operation needs in each window for its shares to say anything.
MIN_SPANS = 5
# A share moved when the two windows differ by this many standard errors and by this much.
MOVED_Z = 3.0
MIN_SHIFT = 0.2
# A call still made: at least this share of the spans made it before, and at least half as many now.
STILL_MADE = 0.1


@dataclass(frozen=True)
class CallsMove:
    """An operation whose calls moved (the record it was read from is its citation's), said of
    `service`: the share of its spans (of those that made `given`, when named) that made any of
    `calls`, as a change from the baseline to the incident. A trace's path that moved is one too
    (`paths`): the share of the traces that took a step in which one of `calls` came next."""

    service: str
    calls: tuple[str, ...]
    given: str
    change: Change
    role: str = TRACE_CALLS


Share = tuple[float, int]


@dataclass(frozen=True)
class Shift:
    """The share of the spans (of those that made `given`) that made any of `calls`, before and after
    (each with the spans it is of), and how many standard errors apart."""

    calls: tuple[str, ...]
    given: str
    before: Share
    after: Share
    z: float

    @property
    def moved(self) -> bool:
        return abs(self.z) >= MOVED_Z and abs(self.after[0] - self.before[0]) >= MIN_SHIFT


class Shares(Protocol):
    """A record that says shares of its windows (`TraceCallsRecord`, `TracePathsRecord`)."""

    def share(
        self, steps: Collection[str], *, start: datetime, end: datetime, given: str = ""
    ) -> tuple[float, int] | None: ...


@dataclass(frozen=True)
class ShareWindows:
    """A record's baseline [baseline_start, start) and incident [start, end]."""

    baseline_start: datetime
    start: datetime
    end: datetime

    def shift(self, record: Shares, calls: tuple[str, ...], *, given: str = "") -> Shift | None:
        before = record.share(calls, start=self.baseline_start, end=self.start, given=given)
        after = record.share(calls, start=self.start, end=self.end, given=given)
        z = _z(before, after)
        return Shift(calls, given, before, after, z) if z is not None else None

    def move(self, service: str, shift: Shift, *, role: str = "") -> CallsMove:
        change = Change(
            onset=self.start,
            before=shift.before[0],
            after=shift.after[0],
            score=abs(shift.z),
            level_start=self.baseline_start,
            baseline_start=self.baseline_start,
            baseline_end=self.start,
            end=self.end,
        )
        role = role or (ANSWERED_BEFORE if shift.given else TRACE_CALLS)
        return CallsMove(service=service, calls=shift.calls, given=shift.given, change=change, role=role)


def calls_moved(record: TraceCallsRecord) -> CallsMove | None:
    """How the operation's calls moved from its first window read (the baseline) to its last (the
    incident); None when they did not, or it was read in one window only."""
    if len(record.windows) < 2:
        return None
    baseline, incident = record.windows[0], record.windows[-1]
    windows = ShareWindows(baseline.began, incident.began, incident.ended)
    shifts = [shift for call in record.calls() if (shift := windows.shift(record, (call,))) is not None]
    moved = [shift for shift in shifts if shift.moved]
    if not moved:
        return None
    appeared = max((shift for shift in moved if shift.z > 0), key=attrgetter("z"), default=None)
    if appeared is not None:
        return windows.move(record.service, appeared)
    vanished = [shift for shift in moved if shift.after[0] < shift.before[0] / 2]
    still_made = [
        shift.calls[0]
        for shift in shifts
        if shift not in vanished and shift.before[0] >= STILL_MADE and shift.after[0] >= shift.before[0] / 2
    ]
    gone = tuple(call for shift in vanished for call in shift.calls)
    stopped_after = [
        shift
        for made in still_made
        if gone and (shift := windows.shift(record, gone, given=made)) is not None and shift.z <= -MOVED_Z
    ]
    if stopped_after:
        last_answered = min(stopped_after, key=attrgetter("z"))
        return windows.move(callee_of(last_answered.given), last_answered)
    return windows.move(record.service, min(moved, key=attrgetter("z")))


def _z(before: Share | None, after: Share | None) -> float | None:
    """The two-proportion z statistic of the move from `before` to `after`; None with too few spans."""
    if before is None or after is None or min(before[1], after[1]) < MIN_SPANS:
        return None
    (p1, n1), (p2, n2) = before, after
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    error = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    # No spread: every span made it (or none did) in both windows.
    return (p2 - p1) / error if error > 0 else 0.0


def callee_of(call: str) -> str:
    """The service that served a call (`<service> <operation>`)."""
    return call.partition(" ")[0]


def operation_of(call: str) -> str:
    """The operation a call (`<service> <operation>`) named."""
    return call.partition(" ")[2]


def calls_said(calls: Sequence[str], *, caller: str) -> str:
    """The callees of calls, each once (`currency、shipping`); a step of the caller's own by its
    operation (`「Cart.Prepare」`)."""
    return "、".join(
        dict.fromkeys(
            f"「{operation_of(call)}」" if callee_of(call) == caller else callee_of(call) for call in calls
        )
    )
