"""What a metric catalog source answers (Prometheus, the demo world, a fixture)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from tools.evidence.source import Source
from tools.metric_catalog import MetricCatalog


@runtime_checkable
class MetricCatalogSource(Source, Protocol):
    """The metrics it holds: each family's TYPE, HELP, unit and series names, and the values of the
    labels that name things (`tools.metric_catalog`)."""

    def metric_catalog(self, *, now: datetime) -> MetricCatalog: ...
