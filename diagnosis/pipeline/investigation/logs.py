"""Error-log spikes (§23 "error-log pattern spikes against the baseline"): every service's error lines
over the last few minutes, a point a minute, read by one LogQL metric query over the investigation's
window and compared with the baseline as any key signal is (`change.change_of`). Counted over a few
minutes like a counter's rate (`signals.RATE_RANGE`): a burst of errors in one minute (an exception
thrown while a fault lasts) is then a step of a few points, which a change needs, not one.

A line is an error line by the rule the log search uses for a line without a level label
(`tools.loglines.ERROR_IN_LINE`). A minute without an error line is a 0, not a gap, wherever the
service wrote any line: Loki answers no sample for a count of nothing, so the query adds every
service's count of all its lines times 0 (`or`) — a service that wrote nothing stays a gap.

The addresses in every service's lines (§23 "upstream addresses in logs"): a `host:port` a service
writes (an upstream it failed on, the database it connects to) is a call to whoever serves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from diagnosis.pipeline.investigation.signals import RATE_RANGE, KeySignal
from tools.loglines import ERROR_IN_LINE

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
