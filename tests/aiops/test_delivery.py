"""Report delivery to DIAGNOSIS_NOTIFY_URL: versioned JSON, bearer token, every
attempt recorded, retries scheduled in the worker with back-off, visible in admin."""

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import Schedule
from rest_framework.test import APIClient

from aiops.delivery import delivery_attempt
from aiops.models import ReportDelivery
from diagnosis.models import DiagnosisSession
from tests.aiops.support import DEMO_NOW, TOKEN, alert, notification
from tests.factories import StaffUserFactory
from tests.notify_receiver import NotifyReceiver

pytestmark = pytest.mark.django_db

NOTIFY_TOKEN = "notify-secret-for-tests"


@pytest.fixture
def receiver():
    with NotifyReceiver() as receiver:
        yield receiver


@pytest.fixture(autouse=True)
def notify_settings(settings, receiver):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
        "NOTIFY_URL": receiver.url,
        "NOTIFY_TOKEN": NOTIFY_TOKEN,
        "NOTIFY_RETRY_DELAYS": [20, 60],
        "PUBLIC_URL": "https://aiops.example",
    }


@pytest.fixture
def committed(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def post(payload: dict):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return client.post("/api/alertmanager/webhook", json.dumps(payload), content_type="application/json")


def checkout(**kwargs) -> dict:
    labels = {"service": "Checkout API", "namespace": "shop"}
    return alert(
        "CheckoutLatencyHigh", "Checkout API", fingerprint="c0ffee0000000001", labels=labels, **kwargs
    )


def test_completed_report_is_delivered_as_version_1_json_with_each_alerts_verdict(receiver, committed):
    with committed():
        response = post(notification(checkout()))

    [received] = receiver.received
    assert received.headers["Authorization"] == f"Bearer {NOTIFY_TOKEN}"
    body = received.body
    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    child = report.children.get()
    assert (body["version"], body["status"], body["report_id"]) == ("1", "completed", report.session_id)
    assert body["url"] == f"https://aiops.example/c/{report.session_id}"
    [item] = body["alerts"]
    assert item["fingerprint"] == "c0ffee0000000001"
    assert item["starts_at"] == "2026-11-29T06:35:00+00:00"
    assert (item["alert_name"], item["labels"]["service"], item["state"]) == (
        "CheckoutLatencyHigh",
        "Checkout API",
        "firing",
    )
    assert (item["verdict"], item["output_type"]) == (child.verdict, child.output_type)
    assert item["verdict"] in {"PASS", "LOW_CONFID", "REJECT"} and item["summary"]
    assert item["session_url"] == f"https://aiops.example/c/{child.session_id}"
    delivery = ReportDelivery.objects.get()
    assert (delivery.state, delivery.attempt_count) == ("delivered", 1)
    assert [(a.number, a.http_status, a.succeeded) for a in delivery.attempts.all()] == [(1, 200, True)]


def test_resolved_episode_is_delivered_with_its_state(receiver, committed):
    with committed():
        post(notification(checkout()))
    with committed():
        post(notification(checkout(status="resolved")))

    assert [r.body["status"] for r in receiver.received] == ["completed", "resolved"]
    [item] = receiver.received[1].body["alerts"]
    assert (item["state"], item["ends_at"]) == ("resolved", "2026-11-29T06:58:00+00:00")
    assert item["verdict"] == receiver.received[0].body["alerts"][0]["verdict"]


def test_episode_resolved_before_its_report_completes_is_told_in_the_completion(receiver, committed):
    with committed():
        post(notification(checkout()))
        post(notification(checkout(status="resolved")))  # arrives while the analysis is still queued

    [received] = receiver.received
    assert received.body["status"] == "completed"
    assert received.body["alerts"][0]["state"] == "resolved"


def test_failed_delivery_is_retried_with_back_off_first_within_a_minute(receiver, committed):
    receiver.statuses = [503, 502]

    with committed():
        post(notification(checkout()))

    delivery = ReportDelivery.objects.get()
    retries = Schedule.objects.filter(func="aiops.tasks.delivery_attempt_task")
    retry = retries.get()
    assert (retry.func, retry.args, retry.schedule_type) == (
        "aiops.tasks.delivery_attempt_task",
        f"({delivery.pk},)",
        "O",
    )
    assert timezone.now() < retry.next_run <= timezone.now() + timedelta(seconds=60)
    assert (delivery.state, delivery.next_attempt_at) == ("pending", retry.next_run)

    delivery_attempt(delivery_pk=delivery.pk)  # the worker runs the schedule
    delivery.refresh_from_db()
    later = retries.order_by("-id").first()
    assert later.next_run - timezone.now() > timedelta(seconds=30)  # the next delay is longer
    delivery_attempt(delivery_pk=delivery.pk)

    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempt_count) == ("delivered", 3)
    attempts = [(a.number, a.http_status, a.succeeded) for a in delivery.attempts.all()]
    assert attempts == [(1, 503, False), (2, 502, False), (3, 200, True)]
    assert delivery.attempts.first().error == "HTTP 503: receiver unavailable"
    assert len(receiver.received) == 3
    # Delivered: a late duplicate of the task sends nothing more.
    assert delivery_attempt(delivery_pk=delivery.pk) is None
    assert len(receiver.received) == 3


def test_unreachable_receiver_is_given_up_after_the_last_retry(settings, committed):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "NOTIFY_URL": "http://127.0.0.1:9/refused",
        "NOTIFY_RETRY_DELAYS": [5],
    }

    with committed():
        post(notification(checkout()))
    delivery = ReportDelivery.objects.get()
    delivery_attempt(delivery_pk=delivery.pk)

    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempt_count) == ("gave_up", 2)
    assert all(a.http_status is None and "Connection refused" in a.error for a in delivery.attempts.all())


def test_nothing_is_delivered_without_a_notify_url(settings, receiver, committed):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"NOTIFY_URL": None}

    with committed():
        post(notification(checkout()))

    assert not ReportDelivery.objects.exists() and receiver.received == []


def test_each_attempt_is_visible_in_admin(client, receiver, committed):
    receiver.statuses = [500]
    with committed():
        post(notification(checkout()))
    delivery = ReportDelivery.objects.get()
    client.force_login(StaffUserFactory(is_superuser=True))

    listing = client.get(reverse("admin:aiops_reportdelivery_changelist")).content.decode()
    page = client.get(reverse("admin:aiops_reportdelivery_change", args=[delivery.pk])).content.decode()

    assert receiver.url in listing
    assert "投递尝试" in page and "HTTP 500" in page
    assert reverse("admin:diagnosis_diagnosissession_change", args=[delivery.report_id]) in page
    episodes = client.get(reverse("admin:aiops_alertepisode_changelist")).content.decode()
    assert "c0ffee0000000001" in episodes
