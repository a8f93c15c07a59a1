"""How the traces' paths moved, from a sample of traces (`query_trace_paths`): of the traces that took a
step, the share in which another step came right after it, before the incident and in it, compared as
two proportions.

A code fault changes the path a request takes inside a service before it changes any rate: a line no
longer followed by the one that always came after it (an exception thrown between them, an early
return), or followed by a new one (an error path). Only pairs with a line written in a span in them are
read (a span's start followed by another's is the call graph, `calls`), and such a move is said of the
service whose code it shows going another way: the one that wrote the second step when that is a line
of another service's (a caller's line now written, or no longer, right after a callee's step), else the
one that took the first step.

Each share is one the gatekeeper computes again from the cited record (`TracePathsRecord.share`).
"""

from __future__ import annotations

from diagnosis.pipeline.investigation.calls import CallsMove, ShareWindows, Shift, callee_of
from tools.evidence.trace_paths.record import TracePathsRecord

TRACE_PATH = "trace_path"
LABEL = "调用链路径"
UNIT = "share"
# A step's next one moved when the two windows' shares differ by this many standard errors: a sample
# holds hundreds of steps, each with several next ones, so chance alone passes 3 somewhere (5 was
# chosen on half of Nezha's TrainTicket faults and held on the other half, README).
MOVED_Z = 5.0
# A line of the step's own service that no longer came after it (its share at least halved) is the mark
# of a code fault, an exception thrown or an early return between the two lines; few pairs are such, and
# a chance move of one is rarer than of any pair, so it needs fewer (chosen with the path's weight on half
# of Nezha's TrainTicket faults, README).
VANISHED_Z = 4.0


def path_moved(record: TracePathsRecord) -> CallsMove | None:
    """The step after the record's that moved most from its first window read (the baseline) to its
    last (the incident), said of the service that wrote it if it is a line, else of the record's; None
    when none did, none is a line's pair, or it was read in one window only."""
    if len(record.windows) < 2:
        return None
    baseline, incident = record.windows[0], record.windows[-1]
    windows = ShareWindows(baseline.began, incident.began, incident.ended)
    shifts = [
        shift
        for after in record.next_steps()
        if (record.event or record.is_event(after))
        and (shift := windows.shift(record, (after,))) is not None
        and abs(shift.z) >= (VANISHED_Z if _own_line_vanished(record, after, shift) else MOVED_Z)
    ]
    if not shifts:
        return None
    moved = max(shifts, key=lambda shift: (abs(shift.z), shift.calls))
    after = moved.calls[0]
    return windows.move(
        callee_of(after) if record.is_event(after) else record.service, moved, role=TRACE_PATH
    )


def _own_line_vanished(record: TracePathsRecord, after: str, shift: Shift) -> bool:
    """Whether `after` is a line of the record's own service whose share after it at least halved."""
    return (
        record.is_event(after)
        and callee_of(after) == record.service
        and shift.after[0] <= shift.before[0] / 2
    )


def step_said(step: str, *, service: str) -> str:
    """A next step (`<service> <step>`) as a mechanism names it: `「step」` in the same service, else
    `<service>「step」`."""
    owner, _, name = step.partition(" ")
    return f"「{name}」" if owner == service else f"{owner}「{name}」"
