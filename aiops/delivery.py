"""Delivering reports to `DIAGNOSIS_NOTIFY_URL`.

When a report of Alertmanager's alerts completes, one of its episodes resolves, or a flapping group
starts, goes on or settles (`aiops.services` flapping), a versioned
JSON goes to the configured URL (bearer `DIAGNOSIS_NOTIFY_TOKEN`). Each delivery is a row; each
try of it a `DeliveryAttempt`. A failed try is retried by the django-q2 worker after the next of
`DIAGNOSIS["NOTIFY_RETRY_DELAYS"]` (the first within a minute); after the last the delivery gives up.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import timedelta

import httpx2
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from aiops.models import DeliveryAttempt, ReportDelivery
from diagnosis.models import DiagnosisSession

logger = logging.getLogger(__name__)

PAYLOAD_VERSION = "1"
ATTEMPT_TASK = "aiops.tasks.delivery_attempt_task"
ERROR_CHARS = 1000


def report_payload(*, report: DiagnosisSession, event: str) -> dict:
    """The versioned notification body: the report and each of its alerts with its verdict."""
    return {
        "version": PAYLOAD_VERSION,
        "report_id": report.session_id,
        "status": event,
        "url": _public_url(report.session_id),
        "alerts": [
            {
                "fingerprint": alert.get("fingerprint", ""),
                "starts_at": alert.get("starts_at"),
                "ends_at": alert.get("ends_at"),
                "alert_name": alert["alert_name"],
                "labels": alert.get("labels") or {},
                "state": alert["state"],
                "verdict": alert.get("verdict"),
                "output_type": alert.get("output_type"),
                "summary": alert.get("summary") or alert.get("not_analysed_reason") or "",
                "session_url": _public_url(alert["session_id"]) if alert.get("session_id") else None,
                # A flapping group's count, first start and state; null otherwise.
                "flapping": alert.get("flapping"),
            }
            for alert in report.alert_scope.get("alerts") or []
        ],
    }


def delivery_queue(*, report: DiagnosisSession, event: str) -> ReportDelivery | None:
    """Record a delivery of the report as it is now, first tried once the caller's transaction
    commits; None when no `DIAGNOSIS_NOTIFY_URL` is configured."""
    url = settings.DIAGNOSIS.get("NOTIFY_URL")
    if not url:
        return None
    delivery = ReportDelivery.objects.create(
        report=report, event=event, url=url, payload=report_payload(report=report, event=event)
    )
    transaction.on_commit(lambda: _enqueue(delivery.pk))
    return delivery


def delivery_attempt(*, delivery_pk: int) -> DeliveryAttempt | None:
    """One try of a pending delivery (background task body); schedules the next try on failure."""
    with transaction.atomic():
        delivery = ReportDelivery.objects.select_for_update().get(pk=delivery_pk)
        if delivery.state != ReportDelivery.State.PENDING:
            return None
        delivery.attempt_count += 1
        delivery.next_attempt_at = None
        delivery.save(update_fields=["attempt_count", "next_attempt_at"])
    number = delivery.attempt_count
    # The POST happens outside any transaction: a slow receiver holds no lock.
    http_status, error, latency_ms = _post(delivery)
    succeeded = http_status is not None and 200 <= http_status < 300
    attempt = DeliveryAttempt.objects.create(
        delivery=delivery,
        number=number,
        http_status=http_status,
        error=error[:ERROR_CHARS],
        succeeded=succeeded,
        latency_ms=latency_ms,
    )
    delays = settings.DIAGNOSIS["NOTIFY_RETRY_DELAYS"]
    if succeeded:
        delivery.state = ReportDelivery.State.DELIVERED
    elif number <= len(delays):
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=delays[number - 1])
        _schedule(delivery.pk, delivery.next_attempt_at)
    else:
        delivery.state = ReportDelivery.State.GAVE_UP
        logger.warning("delivery %s to %s given up after %s attempts", delivery.pk, delivery.url, number)
    delivery.save(update_fields=["state", "next_attempt_at"])
    return attempt


def _post(delivery: ReportDelivery) -> tuple[int | None, str, int]:
    headers = {"Content-Type": "application/json", "User-Agent": "aiops-diagnosis"}
    if token := settings.DIAGNOSIS.get("NOTIFY_TOKEN"):
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(delivery.payload, ensure_ascii=False).encode()
    started = time.perf_counter()
    try:
        # The same client as the evidence sources; redirects not followed (a receiver answers itself).
        response = httpx2.post(
            delivery.url, content=body, headers=headers, timeout=settings.DIAGNOSIS["NOTIFY_TIMEOUT"]
        )
    except (httpx2.HTTPError, ValueError) as exc:  # refused, timeout, DNS, bad URL
        status, error = None, f"{type(exc).__name__}: {exc}"
    else:
        status = response.status_code
        error = "" if status < 400 else f"HTTP {status}: {response.text[:ERROR_CHARS]}"
    return status, error, int((time.perf_counter() - started) * 1000)


def _enqueue(delivery_pk: int) -> None:
    from django_q.tasks import async_task

    async_task(ATTEMPT_TASK, delivery_pk, task_name=f"report-delivery-{delivery_pk}")


def _schedule(delivery_pk: int, when) -> None:
    from django_q.models import Schedule
    from django_q.tasks import schedule

    schedule(
        ATTEMPT_TASK,
        delivery_pk,
        name=f"report-delivery-{delivery_pk}-retry-{when:%Y%m%dT%H%M%S%f}",
        schedule_type=Schedule.ONCE,
        repeats=1,
        next_run=when,
    )


def _public_url(session_id: str) -> str:
    return settings.DIAGNOSIS.get("PUBLIC_URL", "") + reverse("chat-conversation", args=[session_id])
