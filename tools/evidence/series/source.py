"""What a series source answers (Prometheus): PromQL, and for a labelled one its label names and values."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.evidence.source import Source
from tools.signal_roles import MetricFamily


@runtime_checkable
class SeriesSource(Source, Protocol):
    """`query_promql`: `{result_type, series}` of a PromQL query, instant (`minutes` 0) or a range;
    with `total_series` when the source kept only the first of them (`tools.bounds.SeriesKept`)."""

    def query_promql(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]: ...

    def retention_minutes(self) -> int | None:
        """How far back it keeps samples; None when it cannot say."""
        return None

    def metric_families(self) -> list[MetricFamily]:
        """Its metric families with their TYPE and HELP; none when it cannot say."""
        return []


@runtime_checkable
class LabelledSeriesSource(SeriesSource, Protocol):
    """A series source that also tells its series' label names and values; one that
    cannot has no carrier, and PromQL templates are taken as written."""

    def label_names(self, *, match: str) -> list[str]: ...

    def label_values(self, label: str, *, match: str | None = None) -> list[str]: ...
