"""What a log series source answers (Loki): a LogQL metric query over the last minutes."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class LogSeriesSource(Source, Protocol):
    """`query_logql`: `{result_type, series}` of a LogQL metric query over the last `minutes`, one
    point a minute (a series as Prometheus writes one: `{metric, values: [[ts, "v"], …]}`)."""

    def query_logql(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]: ...
