"""Test support for AIOps: Alertmanager notifications in the real webhook format (version 4), posted
to the webhook; a flapping alert's episodes."""

from __future__ import annotations

import copy
import json

from rest_framework.test import APIClient

DEMO_NOW = "2026-11-29T15:00:00+08:00"
TOKEN = "am-webhook-secret-for-tests"
# Alertmanager's "no end yet".
NO_END = "0001-01-01T00:00:00Z"
# Five episodes a minute apart, each firing for 30 s: well inside the 30-minute flap window.
STARTS = [f"2026-11-29T06:3{minute}:00.000Z" for minute in range(5)]
ENDS = [f"2026-11-29T06:3{minute}:30.000Z" for minute in range(5)]


def alert(
    name: str,
    service: str,
    *,
    status: str = "firing",
    fingerprint: str,
    starts_at: str = "2026-11-29T06:35:00.000Z",
    labels: dict | None = None,
    annotations: dict | None = None,
) -> dict:
    """One alert; `labels` replace the default ones (alertname kept), `annotations` are added."""
    default_labels = {"service": service, "severity": "critical", "namespace": "production"}
    return {
        "status": status,
        "labels": {"alertname": name, **(default_labels if labels is None else labels)},
        "annotations": {
            "summary": f"{name} on {service}",
            "description": "由 Prometheus 规则触发",
            **(annotations or {}),
        },
        "startsAt": starts_at,
        "endsAt": "2026-11-29T06:58:00.000Z" if status == "resolved" else NO_END,
        "generatorURL": "http://prometheus.example:9090/graph?g0.expr=up",
        "fingerprint": fingerprint,
    }


def notification(*alerts: dict, group_key: str = '{}/{severity="critical"}:{namespace="production"}') -> dict:
    """A notification as Alertmanager posts it: two firing alerts and a resolved one by default."""
    alerts = alerts or (
        alert("HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718"),
        alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829"),
        alert("SlowResponse", "user-service", status="resolved", fingerprint="c3d4e5f60718293a"),
    )
    firing = any(a["status"] == "firing" for a in alerts)
    return copy.deepcopy(
        {
            "receiver": "aiops-diagnosis",
            "status": "firing" if firing else "resolved",
            "alerts": list(alerts),
            "groupLabels": {"namespace": "production"},
            "commonLabels": {"namespace": "production", "severity": "critical"},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager.example:9093",
            "version": "4",
            "groupKey": group_key,
            "truncatedAlerts": 0,
        }
    )


def webhook_post(payload: dict):
    """The notification as Alertmanager posts it, with the webhook's token; it must be taken (202)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    response = client.post("/api/alertmanager/webhook", json.dumps(payload), content_type="application/json")
    assert response.status_code == 202, response.content
    return response


def episode(make, number: int, *, resolved: bool = False) -> dict:
    """Episode `number` of the alert `make(**alert kwargs)` makes, firing or resolved after 30 s."""
    payload = make(status="resolved" if resolved else "firing", starts_at=STARTS[number])
    if resolved:
        payload["endsAt"] = ENDS[number]
    return payload


def flap(make, committed, episodes: range) -> None:
    """Each of these episodes fires and resolves, each notice committed (its deliveries tried)."""
    for number in episodes:
        with committed():
            webhook_post(notification(episode(make, number)))
        with committed():
            webhook_post(notification(episode(make, number, resolved=True)))
