"""Alertmanager API v2: the alert list with silences and inhibitions; with Prometheus configured too,
each alert's current value and `expr` come from Prometheus, joined on labels."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tools.evidence.alerts.source import AlertSource
from tools.inventory import SourceInventory
from tools.records import labelled_alert_record, parsed_time, service_of
from tools.sources.http import HttpSource
from tools.sources.prometheus import PrometheusSource
from tools.terms import matches


def alert_state(status: dict) -> str:
    if status.get("silencedBy"):
        return "silenced"
    if status.get("inhibitedBy"):
        return "inhibited"
    return "firing"


class AlertmanagerSource(HttpSource, AlertSource):
    kind = "alertmanager"

    def __init__(self, base_url: str, *, prometheus: PrometheusSource | None = None) -> None:
        super().__init__(base_url)
        self.prometheus = prometheus

    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> AlertmanagerSource:
        prometheus = PrometheusSource.configured(config) if config["PROMETHEUS_URL"] else None
        return cls(config["ALERTMANAGER_URL"], prometheus=prometheus)

    def provenance(self) -> tuple[str, str]:
        if self.prometheus is None:
            return super().provenance()
        return f"{self.kind}+{self.prometheus.kind}", f"{self.location} + {self.prometheus.location}"

    def check(self) -> None:
        self.get_json("/api/v2/status")
        if self.prometheus is not None:
            self.prometheus.check()

    def alert_list(self) -> list[dict]:
        payload = self.get_json("/api/v2/alerts")
        if not isinstance(payload, list):
            raise self.error(f"/api/v2/alerts 返回的不是告警列表（{str(payload)[:200]}）")
        return payload

    def inventory(self, *, now: datetime) -> SourceInventory:
        """The alert list's alert names and services (Prometheus, if joined, is asked on its own)."""
        labels = [alert.get("labels") or {} for alert in self.alert_list()]
        return SourceInventory(
            services={service for label_set in labels if (service := service_of(label_set))},
            alerts={name for label_set in labels if (name := label_set.get("alertname"))},
        )

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]:
        payload = self.alert_list()
        samples = self.prometheus.alert_records(now=now) if self.prometheus is not None else []
        records = [alert_record(alert, samples=samples, now=now) for alert in payload]
        return [
            record
            for record in records
            if matches(service, record["service"]) and matches(alert_name, record["alert_name"])
        ]


def alert_record(alert: dict, *, samples: list[dict], now: datetime) -> dict:
    labels = dict(alert.get("labels") or {})
    status = alert.get("status") or {}
    # Alertmanager adds external labels: the Prometheus alert's labels are a subset of its own.
    sample = next((s for s in samples if s["labels"].items() <= labels.items()), None)
    return labelled_alert_record(
        labels=labels,
        annotations=dict(alert.get("annotations") or {}),
        state=alert_state(status),
        started=parsed_time(alert.get("startsAt", "")),
        now=now,
        value=sample["value"] if sample else None,
        fingerprint=alert.get("fingerprint", ""),
        silenced_by=list(status.get("silencedBy") or []),
        inhibited_by=list(status.get("inhibitedBy") or []),
        expr=sample["expr"] if sample else "",
    )
