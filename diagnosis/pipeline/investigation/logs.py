"""Error-log spikes (§23 "error-log pattern spikes against the baseline"): every service's error lines
over the last few minutes, a point a minute, read by one LogQL metric query over the investigation's
window and compared with the baseline as any key signal is (`change.change_of`). Counted over a few
minutes like a counter's rate (`signals.RATE_RANGE`): a burst of errors in one minute (an exception
thrown while a fault lasts) is then a step of a few points, which a change needs, not one.

A line is an error line by the rule the log search uses for a line without a level label
(`tools.loglines.ERROR_IN_LINE`). A minute without an error line is a 0, not a gap, wherever the
service wrote any line: Loki answers no sample for a count of nothing, so the query adds every
service's count of all its lines times 0 (`or`) — a service that wrote nothing stays a gap.

The patterns of each service's lines (Loki's pattern ingester, `query_log_patterns`): a pattern a
service wrote steadily that it no longer writes (an exception thrown before the line), or one it
starts writing (a new code path, a new failure), while it still writes others, is a change of its
code's path. A count that only grew or shrank with the traffic is not: a pattern moved only when it
appeared from nothing or vanished to nothing.

The addresses in every service's lines (§23 "upstream addresses in logs"): a `host:port` a service
writes (an upstream it failed on, the database it connects to) is a call to whoever serves it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from diagnosis.pipeline.investigation.change import Change, Point, change_of, window_median
from diagnosis.pipeline.investigation.signals import RATE_RANGE, KeySignal
from tools.loglines import ERROR_IN_LINE
from tools.logql import stream_selector

LOG_ERRORS = "log_errors"
WHOLE_BASELINE = timedelta(days=1)
# How a mechanism names it and the unit its numbers are said in (a count over the range).
LABEL = "错误日志"
UNIT = f"条/{RATE_RANGE.removesuffix('m')}分钟"
QUERY = (
    'sum by ({label}) (count_over_time({{{label}=~".+"}} |~ `{errors}` [{range}]))'
    ' or sum by ({label}) (count_over_time({{{label}=~".+"}} [{range}])) * 0'
)


def log_errors_signal(service_label: str) -> KeySignal:
    """The error lines of every service named by `service_label`, one query for all."""
    return KeySignal(
        role=LOG_ERRORS,
        label=LABEL,
        unit=UNIT,
        metric="count_over_time",
        by=service_label,
        query=QUERY.format(label=service_label, errors=ERROR_IN_LINE, range=RATE_RANGE),
        # A count of lines: a service that logged no error in its baseline moves by a few, not by one.
        floor=1.0,
        # Its level is the quiet one of the whole baseline: an earlier burst of errors just before
        # (an earlier incident) is a few of its minutes, not the level a new burst is read against.
        level_window=WHOLE_BASELINE,
    )


LOG_PATTERN = "log_pattern"
PATTERN_LABEL = "pattern"
PATTERN_UNIT = "条/分钟"


def log_patterns_signal(service_label: str) -> KeySignal:
    """Each service's line patterns, one query a service (`log_patterns_selectors`)."""
    return KeySignal(
        role=LOG_PATTERN,
        label="日志模式",
        unit=PATTERN_UNIT,
        metric="patterns",
        by=service_label,
        query="",
    )


def log_patterns_selectors(service_label: str, services: Iterable[str], *, limit: int) -> tuple[str, ...]:
    """The stream selector of each service (in name order), at most `limit`."""
    return tuple(stream_selector(service_label, service) for service in sorted(services)[:limit])


def pattern_change(
    points: Sequence[Point], *, onset_hint: datetime, baseline_start: datetime, end: datetime
) -> Change | None:
    """How a pattern's count a minute moved, when it appeared or vanished. Judged on a log scale: a
    line's count follows the traffic, so a pattern at 14 to 33 a minute has a wide spread, yet its
    falling to none is no traffic's doing; on `log(1 + count)` a steady pattern's spread is narrow
    and a new one must reach several a minute. Its level before and after are said as counts, the
    medians of the same minutes (what the gatekeeper computes again)."""
    scaled = [(at, math.log1p(max(0.0, value))) for at, value in points]
    change = change_of(
        scaled,
        onset_hint=onset_hint,
        baseline_start=baseline_start,
        end=end,
        floor=math.log1p(1),
        level_window=WHOLE_BASELINE,
    )
    if change is None:
        return None
    before = window_median(points, start=change.level_start, end=change.baseline_end)
    after = window_median(points, start=change.onset, end=change.end, closed=True)
    if before is None or after is None or (before != 0 and after != 0):
        return None
    return replace(change, before=before, after=after)


# A `host:port`: an IPv4 address or a dotted host name (a bare word before a colon is as often a
# time's `12:05` or a key as a host), then a port.
ADDRESS = r"(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)+):\d{2,5}"
ADDRESS_LABEL = "address"
ADDRESSES_QUERY = (
    'sum by ({label}, {address}) (count_over_time({{{label}=~".+"}} |~ `{pattern}`'
    " | regexp `(?P<{address}>{pattern})` [{range}]))"
)


@dataclass(frozen=True)
class LineAddresses:
    """The first address of each line that names one, counted by service and address: one LogQL query
    over every label that may name a service (a log source's streams are labelled as its shipper
    labels them, not always as the metrics are)."""

    labels: tuple[str, ...]

    @property
    def query(self) -> str:
        return " or ".join(
            ADDRESSES_QUERY.format(label=label, address=ADDRESS_LABEL, pattern=ADDRESS, range=RATE_RANGE)
            for label in self.labels
        )
