"""Alertmanager's re-send of a large group, measured (issue 24): what the webhook costs when nothing is new.

`resend_measure` posts a notification of `alerts` firing alerts to the real webhook view (first
delivery), then the same notification again a few times (Alertmanager's `group_interval` /
`repeat_interval` re-sends), and returns each request's wall time and the process's RSS growth while it ran (sampled
every few milliseconds). The `bench_resend` command and the load test both use it, so the numbers in
the report are the ones the test asserts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse

TOKEN = "bench-resend-token"
PAGE_BYTES = 4096
SAMPLE_SECONDS = 0.005


@dataclass
class Delivery:
    status_code: int
    seconds: float
    rss_growth_mb: float
    body: dict


@dataclass
class ResendResult:
    alerts: int
    body_bytes: int
    first: Delivery
    # Each re-send of the same notification, in order.
    resends: list[Delivery]

    @property
    def resend(self) -> Delivery:
        """The fastest re-send (other processes on the host slow single runs down) with the largest
        RSS growth any re-send showed."""
        fastest = min(self.resends, key=lambda delivery: delivery.seconds)
        growth = max(delivery.rss_growth_mb for delivery in self.resends)
        return Delivery(fastest.status_code, fastest.seconds, growth, fastest.body)


def resend_notification(*, alerts: int, tag: str = "bench") -> dict:
    """A version-4 notification of `alerts` firing alerts, one fingerprint each (about 140 bytes an alert,
    as compact as Alertmanager writes it)."""
    return {
        "receiver": "aiops",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {
                    "alertname": f"Load{index % 7}",
                    "service": f"svc-{index % 50}",
                    "pod": f"p{index}",
                },
                "startsAt": "2026-11-29T06:35:00Z",
                "fingerprint": f"{tag}{index:012x}"[-16:],
            }
            for index in range(alerts)
        ],
        "groupLabels": {},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "",
        "version": "4",
        "groupKey": f"{{}}:{{tag={tag!r}}}",
        "truncatedAlerts": 0,
    }


def _rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_BYTES


@contextmanager
def _rss_peak() -> Iterator[list[int]]:
    """Yields [growth]: the highest RSS seen while the block ran, less the RSS before it."""
    before, peak, done = _rss_bytes(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_SECONDS):
            peak[0] = max(peak[0], _rss_bytes() - before)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()
        peak[0] = max(peak[0], _rss_bytes() - before)


def _deliver(client: Client, body: bytes) -> Delivery:
    with _rss_peak() as growth:
        started = time.perf_counter()
        response = client.post(
            reverse("api-alertmanager-webhook"),
            data=body,
            content_type="application/json",
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        seconds = time.perf_counter() - started
    body = response.json() if response.headers.get("Content-Type") == "application/json" else {}
    return Delivery(response.status_code, seconds, growth[0] / 2**20, body)


def resend_measure(
    *,
    alerts: int,
    tag: str = "bench",
    resends: int = 3,
    on_first: Callable[[Delivery], None] | None = None,
) -> ResendResult:
    """First delivery and `resends` re-sends of an `alerts`-alert notification through the webhook
    view; `on_first` sees the first delivery before the re-sends are made."""
    body = json.dumps(resend_notification(alerts=alerts, tag=tag), separators=(",", ":")).encode()
    with override_settings(DIAGNOSIS={**settings.DIAGNOSIS, "ALERTMANAGER_TOKEN": TOKEN}):
        client = Client(raise_request_exception=False)
        first = _deliver(client, body)
        if on_first:
            on_first(first)
        again = [_deliver(client, body) for _ in range(resends)]
    return ResendResult(alerts=alerts, body_bytes=len(body), first=first, resends=again)
