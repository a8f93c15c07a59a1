"""Metric catalogs as real stacks expose them, without a server: what Prometheus 2.42 answered while it
scraped itself and Debian 12's node, postgres, redis, nginx and blackbox exporters
(`exporter_catalog.json`), served through the real `PrometheusSource`; and the second world's (the
integration stack's node_exporter scraped as `billing`, `ledger-service` and `node`).

`ExporterLabels` answers what `tools.series.SeriesLabels` asks a source (each metric's label names and
values) from the same capture, so a query built on the catalog places its matchers as it would live.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from tools.metric_catalog import MetricCatalog
from tools.series import SeriesLabels
from tools.sources.prometheus import PrometheusSource

CAPTURE = Path(__file__).with_name("exporter_catalog.json")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SERVICE_LABELS = ("service", "app", "job")
# The second world (tests/integration/stack.py): one node_exporter scraped by three jobs, two of them
# with a `service` label, and a target that is down.
SECOND_WORLD_JOBS = {"ledger-node": "ledger-service", "billing-node": "billing", "node": None}
SECOND_WORLD_PREFIXES = ("node_", "up", "scrape_")


@cache
def capture() -> dict[str, Any]:
    return json.loads(CAPTURE.read_text(encoding="utf-8"))


class CapturedPrometheus(PrometheusSource):
    """The real source class over the captured answers: metadata, names, label names and values."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        super().__init__("http://prometheus.invalid")
        self.answers = answers or capture()
        self.asked: list[tuple[str, dict]] = []

    def data(self, path, params=None, *, object_hook=None):
        self.asked.append((path, dict(params or {})))
        answers = self.answers
        match = (params or {}).get("match[]")
        if path == "/api/v1/metadata":
            return answers["metadata"]
        if path == "/api/v1/labels":
            if match:
                return ["__name__", *answers["series_values"].get(match, {})]
            return sorted({"__name__", *answers["values"]})
        label = path.removeprefix("/api/v1/label/").removesuffix("/values")
        if label == "__name__":
            return answers["names"]
        if match:
            return answers["series_values"].get(match, {}).get(label, [])
        return answers["values"].get(label, [])


def second_world_answers() -> dict[str, Any]:
    """The node_exporter families of the capture, scraped as the integration stack scrapes them."""
    answers = capture()
    names = [name for name in answers["names"] if name.startswith(SECOND_WORLD_PREFIXES)]
    instance = "127.0.0.1:9100"
    series_values = {}
    for name in names:
        own = dict(answers["series_values"].get(name, {}))
        own |= {"instance": [instance], "job": sorted(SECOND_WORLD_JOBS)}
        own["service"] = sorted(service for service in SECOND_WORLD_JOBS.values() if service)
        series_values[name] = own
    values: dict[str, list[str]] = {}
    for own in series_values.values():
        for label, found in own.items():
            values[label] = sorted({*values.get(label, []), *found})
    return {
        "metadata": {
            name: m for name, m in answers["metadata"].items() if name.startswith(SECOND_WORLD_PREFIXES)
        },
        "names": names,
        "values": values,
        "series_values": series_values,
    }


def exporter_catalog() -> MetricCatalog:
    return CapturedPrometheus().metric_catalog(now=NOW)


def second_world_catalog() -> MetricCatalog:
    return CapturedPrometheus(second_world_answers()).metric_catalog(now=NOW)


def series_labels(answers: dict[str, Any] | None = None) -> SeriesLabels:
    """Which label carries a subject on each metric, asked of the captured source as a session asks."""
    source = CapturedPrometheus(answers)
    return SeriesLabels(source, service_labels=SERVICE_LABELS, metrics=source.answers["names"])
