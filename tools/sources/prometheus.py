"""Prometheus HTTP API: alerts with their current value and rule `expr`, PromQL, label values,
scrape targets and how far back the server keeps samples."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import promql_parser
from django.conf import settings

from tools.bounds import OutputBounds, SeriesKept
from tools.clock import local_text
from tools.evidence.alerts.source import AlertSource
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.series.source import LabelledSeriesSource
from tools.evidence.targets.source import TargetSource
from tools.inventory import SourceInventory
from tools.metric_catalog import (
    MAX_LABELS,
    MAX_METRICS,
    STRUCTURAL_LABELS,
    MetricCatalog,
    catalog_from_metadata,
)
from tools.records import labelled_alert_record, parsed_time, service_of
from tools.signal_roles import MetricFamily
from tools.sources.http import HttpSource, SourceError, source_timeout
from tools.terms import matches

logger = logging.getLogger(__name__)

# A range query keeps at most this many points per series.
MAX_POINTS = 120
# The most series a query may bring back (`limit`): a server that knows the parameter stops there and
# warns, an older one ignores it. The query's `timeout` is the source timeout, so the server stops
# evaluating when this client stops waiting.
SERIES_LIMIT = 1000
# The most label names or values asked for: they are the names questions are matched against (every
# metric name of the server), so the bound is high.
LABEL_VALUES_LIMIT = 10_000
ALERT_STATES = ("firing", "pending")
# `storageRetention` joins a time and a size limit so: `15d or 10GiB`.
RETENTION_LIMITS_SEPARATOR = " or "


class PrometheusSource(HttpSource, AlertSource, LabelledSeriesSource, TargetSource, MetricCatalogSource):
    kind = "prometheus"
    # `retention_minutes()` asks the server once per source object.
    _retention_read = False
    _retention: int | None = None

    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> PrometheusSource:
        return cls(config["PROMETHEUS_URL"])

    def check(self) -> None:
        self.data("/api/v1/status/buildinfo")

    def alerting_rules(self) -> list[dict]:
        groups = (self.data("/api/v1/rules", {"type": "alert"}) or {}).get("groups") or []
        return [
            rule for group in groups for rule in group.get("rules") or [] if rule.get("type") == "alerting"
        ]

    def alert_records(self, *, now: datetime) -> list[dict]:
        """Every pending or firing alert, each with its rule's `expr` and its current sample value."""
        return [
            alert_record(alert, expr=rule.get("query", ""), now=now)
            for rule in self.alerting_rules()
            for alert in rule.get("alerts") or []
            if alert.get("state") in ALERT_STATES
        ]

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]:
        return [
            record
            for record in self.alert_records(now=now)
            if matches(service, record["service"]) and matches(alert_name, record["alert_name"])
        ]

    def query_promql(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]:
        """`{result_type, series}`, the series bounded as they are parsed (`total_series` when cut)."""
        bounds = {"timeout": f"{source_timeout():g}", "limit": SERIES_LIMIT}
        kept = SeriesKept(OutputBounds.configured())
        if minutes <= 0:
            data = self.data(
                "/api/v1/query", {"query": query, "time": now.timestamp(), **bounds}, object_hook=kept
            )
        else:
            step = max(1, math.ceil(minutes * 60 / (MAX_POINTS - 1)))
            # Points fall at start + k·step: a start a whole number of steps back puts the last on
            # `now`, so the latest point is the current value (and a series younger than a step shows).
            start = now - timedelta(seconds=step * (minutes * 60 // step))
            data = self.data(
                "/api/v1/query_range",
                {"query": query, "start": start.timestamp(), "end": now.timestamp(), "step": step, **bounds},
                object_hook=kept,
            )
        result_type = data.get("resultType", "")
        result = data.get("result")
        if result_type in ("scalar", "string"):
            return {"result_type": result_type, "series": [{"metric": {}, "value": result}]}
        answer = {
            "result_type": result_type,
            "series": [record for record in result or [] if record is not None],
        }
        if kept.total > len(answer["series"]):
            answer["total_series"] = kept.total
        return answer

    def targets(self) -> list[dict]:
        """Every active scrape target: job, instance, health and the last scrape's error and time."""
        data = self.data("/api/v1/targets", {"state": "active"}) or {}
        return [target_record(target) for target in data.get("activeTargets") or []]

    def retention_minutes(self) -> int | None:
        """How many minutes of samples the server keeps (its time retention), None when it has only
        a size limit or cannot say: a limit is stated only when known, and never fails a query."""
        if not self._retention_read:
            self._retention = self._retention_from_server()
            self._retention_read = True
        return self._retention

    def _retention_from_server(self) -> int | None:
        try:
            info = self.data("/api/v1/status/runtimeinfo")
        except SourceError:
            logger.warning("retention of %s unknown: runtimeinfo failed", self.location, exc_info=True)
            return None
        return retention_minutes_of(str(info.get("storageRetention") or "") if isinstance(info, dict) else "")

    def label_values(self, label: str, *, match: str | None = None) -> list[str]:
        """The values of a label, of every series or (`match`, a series selector) of those it selects."""
        params: dict[str, Any] = {"limit": LABEL_VALUES_LIMIT}
        if match:
            params["match[]"] = match
        return list(self.data(f"/api/v1/label/{label}/values", params) or [])

    def label_names(self, *, match: str) -> list[str]:
        """The label names the series `match` selects carry (`/api/v1/labels?match[]=`)."""
        return list(self.data("/api/v1/labels", {"match[]": match, "limit": LABEL_VALUES_LIMIT}) or [])

    def metric_families(self) -> list[MetricFamily]:
        """Every metric family's TYPE and HELP as the server states them (`/api/v1/metadata`)."""
        metadata = self.data("/api/v1/metadata") or {}
        return [
            MetricFamily(name=name, type=str(entries[0].get("type") or ""), help=str(entries[0].get("help") or ""))
            for name, entries in (metadata.items() if isinstance(metadata, dict) else [])
            if entries
        ]

    def metric_catalog(self, *, now: datetime) -> MetricCatalog:
        """Every metric family's TYPE, HELP and unit (`/api/v1/metadata`), the series names it holds,
        and the values of its labels (`/api/v1/labels`, then one `/api/v1/label/<l>/values` each):
        requests the server answers from its index, whatever it holds."""
        # Many small reads of one server: one client and its connection for them all.
        with self.one_client():
            metadata = self.data("/api/v1/metadata", {"limit": MAX_METRICS}) or {}
            names = self.label_values("__name__")
            labels = [
                label
                for label in self.data("/api/v1/labels", {"limit": LABEL_VALUES_LIMIT}) or []
                if label not in STRUCTURAL_LABELS
            ][:MAX_LABELS]
            values = {label: self.label_values(label) for label in labels}
        return catalog_from_metadata(
            metadata=metadata if isinstance(metadata, dict) else {}, names=names, values=values
        )

    def inventory(self, *, now: datetime) -> SourceInventory:
        """Alert names of the alerting rules and their alerts; services: the service labels' values;
        metrics: the metric names of the series it holds."""
        rules = self.alerting_rules()
        alerts = [alert for rule in rules for alert in rule.get("alerts") or []]
        return SourceInventory(
            services={
                value for label in settings.DIAGNOSIS["SERVICE_LABELS"] for value in self.label_values(label)
            }
            | {service for alert in alerts if (service := service_of(alert.get("labels") or {}))},
            alerts={rule["name"] for rule in rules if rule.get("name")}
            | {name for alert in alerts if (name := (alert.get("labels") or {}).get("alertname"))},
            metrics=set(self.label_values("__name__")),
        )


def alert_record(alert: dict, *, expr: str, now: datetime) -> dict:
    return labelled_alert_record(
        labels=dict(alert.get("labels") or {}),
        annotations=dict(alert.get("annotations") or {}),
        state=alert.get("state", ""),
        started=parsed_time(alert.get("activeAt", "")),
        now=now,
        value=alert.get("value"),
        expr=expr,
    )


def target_record(target: dict) -> dict:
    labels = dict(target.get("labels") or {})
    scraped = parsed_time(target.get("lastScrape", ""))
    return {
        "job": labels.get("job") or target.get("scrapePool", ""),
        "instance": labels.get("instance", ""),
        "health": target.get("health") or "unknown",
        "last_error": target.get("lastError", ""),
        "last_scrape": local_text(scraped) if scraped else "",
        "scrape_url": target.get("scrapeUrl", ""),
        "labels": labels,
    }


def retention_minutes_of(storage_retention: str) -> int | None:
    """The time limit of `storageRetention` (`15d`, `1y`, `15d or 10GiB`) in minutes; None for a
    size only (`10GiB`) or nothing. Durations are Prometheus's own format, read by the PromQL parser."""
    for limit in storage_retention.split(RETENTION_LIMITS_SEPARATOR):
        try:
            return int(promql_parser.parse_duration(limit.strip()).total_seconds() // 60)
        except ValueError:  # the size limit, or nothing
            continue
    return None
