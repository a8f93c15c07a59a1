"""Delivering reports to the configured channels (`aiops.channels`).

When a report of Alertmanager's alerts completes, one of its episodes resolves, or a flapping group
starts, goes on or settles (`aiops.services` flapping), each configured channel gets the notice in its
format: the versioned JSON at `DIAGNOSIS_NOTIFY_URL` (bearer `DIAGNOSIS_NOTIFY_TOKEN`), a card or
Markdown message for each chat bot. Each channel's notice is a delivery row; each try of it a
`DeliveryAttempt`. A failed try (a refused connection, an HTTP error, or an error code in a chat
service's HTTP 200 answer) is retried by the django-q2 worker after the next of
`DIAGNOSIS["NOTIFY_RETRY_DELAYS"]` (the first within a minute); after the last the delivery gives up.
Channels are independent: one failing delays no other.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import httpx2
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from aiops.channels import CHANNELS, channels_configured
from aiops.channels.base import ERROR_CHARS, Channel
from aiops.channels.notice import notice_build
from aiops.models import DeliveryAttempt, ReportDelivery
from diagnosis.models import DiagnosisSession

logger = logging.getLogger(__name__)

ATTEMPT_TASK = "aiops.tasks.delivery_attempt_task"


def delivery_queue(*, report: DiagnosisSession, event: str) -> list[ReportDelivery]:
    """Record one delivery of the report as it is now per configured channel, each first tried once
    the caller's transaction commits; none when no channel is configured."""
    deliveries = []
    for channel in channels_configured():
        url = channel.shown_url(settings.DIAGNOSIS[channel.url_setting])
        try:
            payload = channel.payload(report=report, notice=notice_build(report=report, event=event))
        except Exception as exc:
            # A message that cannot be made must neither undo the caller's commit (the report's
            # completion) nor keep the other channels from theirs: it is a delivery given up at once.
            logger.exception("%s message of report %s not made", channel.name, report.session_id)
            deliveries.append(_unmade(report=report, event=event, channel=channel, url=url, error=exc))
            continue
        delivery = ReportDelivery.objects.create(
            report=report, event=event, channel=channel.name, url=url, payload=payload
        )
        transaction.on_commit(lambda pk=delivery.pk: _enqueue(pk))
        deliveries.append(delivery)
    return deliveries


def _unmade(
    *, report: DiagnosisSession, event: str, channel: Channel, url: str, error: Exception
) -> ReportDelivery:
    delivery = ReportDelivery.objects.create(
        report=report,
        event=event,
        channel=channel.name,
        url=url,
        payload={},
        state=ReportDelivery.State.GAVE_UP,
        attempt_count=1,
    )
    DeliveryAttempt.objects.create(
        delivery=delivery, number=1, error=f"消息未能生成：{type(error).__name__}: {error}"[:ERROR_CHARS]
    )
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
    http_status, error, latency_ms = _post(CHANNELS[delivery.channel], delivery)
    succeeded = not error and http_status is not None and 200 <= http_status < 300
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
        logger.warning(
            "delivery %s to %s %s given up after %s attempts",
            delivery.pk,
            delivery.channel,
            delivery.url,
            number,
        )
    delivery.save(update_fields=["state", "next_attempt_at"])
    return attempt


def _post(channel: Channel, delivery: ReportDelivery) -> tuple[int | None, str, int]:
    """(HTTP status, what went wrong or "", milliseconds) of one signed POST to the channel's address
    as configured now: a corrected address or secret serves the next try."""
    url = settings.DIAGNOSIS.get(channel.url_setting)
    if not url:
        return None, f"{channel.label} 的地址已不再配置", 0
    secret = settings.DIAGNOSIS.get(channel.secret_setting) if channel.secret_setting else None
    outgoing = channel.request(url=url, secret=secret, payload=delivery.payload, now=time.time())
    started = time.perf_counter()
    try:
        # The same client as the evidence sources; redirects not followed (a receiver answers itself).
        response = httpx2.post(
            outgoing.url,
            content=outgoing.body,
            headers=outgoing.headers,
            timeout=settings.DIAGNOSIS["NOTIFY_TIMEOUT"],
        )
    except (httpx2.HTTPError, ValueError) as exc:  # refused, timeout, DNS, bad URL
        # The address is a credential: an error naming it names it as the log shows it.
        status, error = None, f"{type(exc).__name__}: {exc}".replace(outgoing.url, delivery.url)
    else:
        status = response.status_code
        error = channel.refusal(status=status, text=response.text)
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
