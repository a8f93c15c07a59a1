"""Shapes shared by the sources: the alert record, the service a label set names, times as the tools
print them (sample numbers: `tools.numbers`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from tools.clock import local_text


def service_of(labels: dict[str, str]) -> str:
    """The first of `DIAGNOSIS_SERVICE_LABELS` the labels carry, else empty."""
    return next((labels[name] for name in settings.DIAGNOSIS["SERVICE_LABELS"] if labels.get(name)), "")


def alert_record(
    *,
    alert_name: str,
    service: str,
    state: str,
    severity: str,
    description: str,
    started: datetime | None,
    now: datetime,
    labels: dict[str, str],
    value: Any,
    **source_fields: Any,
) -> dict:
    """One alert as `query_alerts` returns it, whatever the source; `source_fields` are what only
    that source knows (annotations, the rule's `expr`, silences, a threshold)."""
    return {
        "alert_name": alert_name,
        "service": service,
        "state": state,
        "severity": severity,
        "description": description,
        "active_at": local_text(started) if started else "",
        "duration": duration_text(started, now),
        "labels": labels,
        "value": value,
        **source_fields,
    }


def labelled_alert_record(
    *,
    labels: dict[str, str],
    annotations: dict[str, str],
    state: str,
    started: datetime | None,
    now: datetime,
    value: Any,
    **source_fields: Any,
) -> dict:
    """The alert record of a Prometheus-style alert: name, service and severity from its labels, the
    description from its annotations."""
    return alert_record(
        alert_name=labels.get("alertname", ""),
        service=service_of(labels),
        state=state,
        severity=labels.get("severity", ""),
        description=annotations.get("description") or annotations.get("summary") or "",
        started=started,
        now=now,
        labels=labels,
        value=value,
        annotations=annotations,
        **source_fields,
    )


def parsed_time(text: str) -> datetime | None:
    """RFC 3339 as Prometheus and Alertmanager write it (nanoseconds, `Z`)."""
    if not text or text.startswith("0001-01-01"):
        return None
    head, _, zone = text.replace("Z", "+00:00").partition("+")
    if "." in head:
        whole, fraction = head.split(".", 1)
        head = f"{whole}.{fraction[:6]}"
    try:
        return datetime.fromisoformat(f"{head}+{zone}" if zone else head)
    except ValueError:
        return None


def duration_text(start: datetime | None, now: datetime) -> str:
    """`15m` like the demo world; under a minute `42s`, over a day `2d3h`."""
    if start is None:
        return ""
    seconds = max(0, int((now - start).total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 24 * 60:
        return f"{minutes}m"
    return f"{minutes // (24 * 60)}d{minutes % (24 * 60) // 60}h"
