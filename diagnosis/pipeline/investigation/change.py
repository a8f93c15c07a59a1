"""How one series moved: its onset, its level before and after (medians) and a robust magnitude
(the shift in units of the spread before it: the median absolute deviation, floored). A series that
only went back to the level of its whole baseline (an earlier incident ending) did not move, nor one
whose baseline made the same move three separate times: the robust spread leaves out short spikes,
so a routine one would otherwise look like a shift of many spreads.

Pure arithmetic over (time, value) points, so the gatekeeper can compute the same numbers again
from the cited range result (`window_median`).
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from tools.evidence.series.record import SeriesRecord

# MAD × this estimates a normal distribution's standard deviation (and a step's MAD × this ÷ √2).
MAD_SCALE = 1.4826
# The spread is never taken below this share of the level (or of the series' typical size): a flat
# series moves only when it moves by a share of what it is.
RELATIVE_FLOOR = 0.05
# A point this many spreads away from the level before has moved; a change smaller is no change.
MOVED = 3.0
# Points before the onset a baseline needs to say a level and a spread.
MIN_BASELINE_POINTS = 3
# The level before is the median of the last stretch of the baseline (earlier incidents in a long
# baseline would shift it); the spread is judged over the whole baseline.
LEVEL_WINDOW = timedelta(minutes=10)
# A series with samples over less than this share of that stretch (traces or lines seen only now and
# then) says too little of it: its one earlier burst would be its level, so the whole baseline is.
LEVEL_COVERAGE = 0.5

# A series whose baseline went this share of the move's way, and came back, this many separate times
# moves so routinely (a periodic job; the quantile of a few requests a minute, a spike at every
# scrape or two): the move is its habit, not an onset. Two earlier incidents in a baseline are not yet
# a habit.
ROUTINE_REACH = 0.75
ROUTINE = 3

# The stated start of an incident is read this early: a series may move a little before someone notices.
EARLY = timedelta(minutes=2)

Point = tuple[datetime, float]


@dataclass(frozen=True)
class Change:
    onset: datetime
    before: float
    after: float
    # |after − before| in units of the spread before it.
    score: float
    # Where the medians were taken: `before` over [level_start, baseline_end), `after` over [onset, end];
    # the spread over [baseline_start, baseline_end).
    level_start: datetime
    baseline_start: datetime
    baseline_end: datetime
    end: datetime

    @property
    def rising(self) -> bool:
        return self.after > self.before


def window_median(
    points: Sequence[Point], *, start: datetime, end: datetime, closed: bool = False
) -> float | None:
    """The median of the values in [start, end) (or [start, end] when `closed`); None when none."""
    values = [value for at, value in points if start <= at and (at <= end if closed else at < end)]
    return statistics.median(values) if values else None


def series_points(record: SeriesRecord) -> list[Point]:
    """A range series' finite samples as (time, value)."""
    points = []
    for pair in record.values or []:
        try:
            at, value = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(value):
            points.append((datetime.fromtimestamp(at, UTC), value))
    return points


def change_of(
    points: Sequence[Point],
    *,
    onset_hint: datetime,
    baseline_start: datetime,
    end: datetime,
    floor: float = 0.0,
    level_window: timedelta = LEVEL_WINDOW,
) -> Change | None:
    """How the series moved after `onset_hint` against [baseline_start, onset_hint − EARLY); None when
    it has too little baseline or did not move. `floor`: the least spread, in the series' unit (a
    count's: one, so a count that was 0 throughout its baseline moves by a few, not by any);
    `level_window`: how much of the baseline's end its level is the median of."""
    # In time order, so each window is a slice found by bisection: an investigation reads a thousand
    # series or more.
    points = sorted(points)
    times = [at for at, _ in points]
    values = [value for _, value in points]
    baseline_from = bisect_left(times, baseline_start)
    baseline_end = onset_hint - EARLY
    baseline_to = bisect_left(times, baseline_end)
    if baseline_to - baseline_from < MIN_BASELINE_POINTS:
        # Little history (a series that began just before): the baseline runs up to the stated start.
        baseline_end = onset_hint
        baseline_to = bisect_left(times, baseline_end)
    before = values[baseline_from:baseline_to]
    after_to = bisect_right(times, end)
    if len(before) < MIN_BASELINE_POINTS or after_to <= baseline_to:
        return None
    level_start = max(baseline_start, baseline_end - level_window)
    in_level = baseline_to - bisect_left(times, level_start)
    if in_level < MIN_BASELINE_POINTS or in_level * _step(points) < LEVEL_COVERAGE * (
        baseline_end - level_start
    ):
        level_start = baseline_start
    level = statistics.median(values[bisect_left(times, level_start) : baseline_to])
    typical = statistics.median(abs(value) for value in values)
    spread = max(_noise(before, level), RELATIVE_FLOOR * max(abs(level), typical), floor)
    after = points[baseline_to:after_to]
    if spread <= 0:
        # Flat at zero before (no errors, no evictions): a rise is measured against its own size (a
        # lone blip is no onset: the point after it must be past it too).
        spread = RELATIVE_FLOOR * max(abs(value) for _, value in after)
    if spread <= 0:
        return None
    # The first onset from which the series stays moved (its median after it) and is not moved the
    # other way at the end: a wobble past the threshold before the real move is not its onset.
    latest = after[-1][1]
    for index, side in _onsets(after, level=level, spread=spread):
        moved = statistics.median(values[baseline_to + index : after_to])
        if (latest - level) / spread * side <= -MOVED:
            continue
        if (moved - level) / spread * side >= MOVED:
            onset = after[index][0]
            break
    else:
        return None
    score = abs(moved - level) / spread
    if score < MOVED:
        return None
    # Back at the level of the whole baseline: the recovery from an earlier incident, not a new move.
    if abs(moved - statistics.median(before)) / spread < MOVED:
        return None
    if _excursions(before, level=level, towards=moved) >= ROUTINE:
        return None
    return Change(
        onset=onset,
        before=level,
        after=moved,
        score=score,
        level_start=level_start,
        baseline_start=baseline_start,
        baseline_end=baseline_end,
        end=end,
    )


def _excursions(values: Sequence[float], *, level: float, towards: float) -> int:
    """How many separate runs of the values went ROUTINE_REACH of the way from `level` to `towards`."""
    reach = ROUTINE_REACH * (towards - level)
    runs, inside = 0, False
    for value in values:
        past = (value - level) / reach >= 1
        runs += past and not inside
        inside = past
    return runs


def _step(points: Sequence[Point]) -> timedelta:
    """The series' sampling step: the median time between its points."""
    gaps = [later - earlier for (earlier, _), (later, _) in pairwise(points)]
    return statistics.median(gaps) if gaps else timedelta(0)


def _noise(values: Sequence[float], level: float) -> float:
    """The spread of a baseline: the smaller of its MAD and its step-to-step noise (repeats of one
    sample at a step finer than the scrape left out). An earlier incident inside the baseline widens
    the MAD but adds only two steps; a slow drift widens the steps' estimate less than the MAD."""
    mad = statistics.median(abs(value - level) for value in values) * MAD_SCALE
    distinct = [value for index, value in enumerate(values) if index == 0 or value != values[index - 1]]
    steps = [abs(later - earlier) for earlier, later in pairwise(distinct)]
    step_noise = statistics.median(steps) * MAD_SCALE / math.sqrt(2) if steps else mad
    return min(mad, step_noise)


def _onsets(after: Sequence[Point], *, level: float, spread: float) -> Iterator[tuple[int, int]]:
    """Where each point past MOVED spreads whose next point (if any) is past it on the same side is, in
    order, with its side (1 above the level, -1 below)."""
    for index, (_, value) in enumerate(after):
        distance = (value - level) / spread
        if abs(distance) < MOVED:
            continue
        following = after[index + 1 : index + 2]
        side = 1 if distance > 0 else -1
        if not following or (following[0][1] - level) / spread * side >= MOVED:
            yield index, side
