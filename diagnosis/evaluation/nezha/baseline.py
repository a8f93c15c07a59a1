"""The simple baseline the product is measured beside: each pod's metric columns, the largest robust
change after the onset against the window before it, services ranked by their largest one.

Read from the CSV rows themselves (the same rows the product reads through Prometheus), so it owes
nothing to the product's code.
"""

from __future__ import annotations

import statistics
from datetime import datetime

from diagnosis.evaluation.nezha.data import Day

# The pod columns a metrics-only ranking would read (the success rate is never collected).
COLUMNS = (
    "CpuUsage(m)",
    "MemoryUsage(Mi)",
    "NetworkReceiveBytes",
    "NetworkTransmitBytes",
    "PodServerLatencyP90(s)",
    "PodServerLatencyP95(s)",
    "PodServerLatencyP99(s)",
    "PodClientLatencyP90(s)",
    "PodClientLatencyP95(s)",
    "PodClientLatencyP99(s)",
    "PodWorkload(Ops)",
)
# MAD × this estimates a normal distribution's standard deviation.
MAD_SCALE = 1.4826
# A flat baseline still has a floor: a change must be this share of its level to count as large.
RELATIVE_FLOOR = 0.05


def baseline_ranking(day: Day, *, onset: datetime, baseline_start: datetime, end: datetime) -> list[str]:
    """Services by their largest robust change (|median after − median before| ÷ the spread before)."""
    scores: dict[str, float] = {}
    for pod in day.pods:
        for column in COLUMNS:
            points = pod.columns.get(column) or []
            before = [value for at, value in points if baseline_start <= at < onset]
            after = [value for at, value in points if onset <= at <= end]
            if len(before) < 2 or not after:
                continue
            scale = statistics.median(abs(value) for _, value in points)
            if scale == 0:
                # A column that is 0 most of the day (TrainTicket's light load) has no spread to judge by.
                continue
            score = robust_change(before, after, scale=scale)
            scores[pod.service] = max(scores.get(pod.service, 0.0), score)
    return sorted(scores, key=lambda service: -scores[service])


def robust_change(before: list[float], after: list[float], *, scale: float) -> float:
    """`scale`: the column's typical size over the day, so a flat window (MAD 0) is not a spread of 0."""
    level = statistics.median(before)
    spread = statistics.median(abs(value - level) for value in before) * MAD_SCALE
    floor = max(spread, (abs(level) + scale) * RELATIVE_FLOOR, 1e-9)
    return abs(statistics.median(after) - level) / floor
