"""What an alert source answers (Alertmanager, Prometheus's rules, the demo world)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class AlertSource(Source, Protocol):
    """`query_alerts`: the alerts known now, filtered by service and alert name."""

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]: ...
