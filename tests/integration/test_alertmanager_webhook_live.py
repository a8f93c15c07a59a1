"""The real Debian Alertmanager posting to the webhook of the live test server.

Prometheus rules fire, resolve and fire again; Alertmanager groups, re-sends and resolves them
as in production; the django-q2 tasks the webhook queues run from the ORM broker as a worker
would; a local receiver stands in for DIAGNOSIS_NOTIFY_URL.
"""

import re

import httpx2
import pytest
from django.conf import settings
from django.core.cache import cache
from django.utils.module_loading import import_string
from django_q.brokers import get_broker
from django_q.scheduler import scheduler
from django_q.signing import SignedPackage

from aiops.models import AlertEpisode
from diagnosis.models import DiagnosisSession
from tests.databases import POSTGRESQL_ONLY
from tests.integration.alerting import alerting_start, wait_until
from tests.integration.stack import missing_binaries
from tests.notify_receiver import NotifyReceiver

pytestmark = [
    pytest.mark.integration,
    # Django's live server shares SQLite's in-memory test connection with the test thread, which
    # runs the queue at the same time: concurrent statements on one connection. CI runs it on
    # PostgreSQL, where each thread has its own connection.
    pytest.mark.skipif(
        settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3",
        reason=f"{POSTGRESQL_ONLY}: the live server and the test thread would share one SQLite connection",
    ),
]

TOKEN = "live-alertmanager-token"
Status = DiagnosisSession.Status
VERDICTS = {"PASS", "LOW_CONFID", "REJECT"}


def run_queued() -> None:
    """Take each queued task off the ORM broker and run it, as the django-q2 cluster would."""
    broker = get_broker()
    while tasks := broker.dequeue():
        for ack_id, package in tasks:
            task = SignedPackage.loads(package)
            import_string(task["func"])(*task["args"], **task["kwargs"])
            broker.acknowledge(ack_id)


@pytest.fixture
def receiver():
    with NotifyReceiver() as receiver:
        yield receiver


@pytest.fixture
def alerting(live_server, tmp_path, settings, receiver):
    missing = missing_binaries()
    if missing:
        pytest.fail(f"Debian packages missing: {', '.join(missing)} (`make test` installs them)")
    cache.clear()
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
        "NOTIFY_URL": receiver.url,
        "PUBLIC_URL": live_server.url,
    }
    running = alerting_start(tmp_path, webhook_url=f"{live_server.url}/api/alertmanager/webhook", token=TOKEN)
    yield running
    running.stop()


def episodes(alert_name: str) -> list[AlertEpisode]:
    return list(
        AlertEpisode.objects.filter(alert_name=alert_name).select_related("report").order_by("starts_at")
    )


def reports_completed(*alert_names: str, count: int = 1):
    def condition() -> bool:
        found = [episodes(name) for name in alert_names]
        return all(
            len(eps) >= count and all(e.report and e.report.status == Status.COMPLETED for e in eps[:count])
            for eps in found
        )

    condition.__doc__ = f"{count} completed report(s) for each of {alert_names}"
    return condition


def webhook_notifications(alerting) -> float:
    metrics = httpx2.get(f"{alerting.stack.alertmanager_url}/metrics", timeout=5).text
    return sum(
        float(m[1])
        for m in re.finditer(
            r'^alertmanager_notifications_total\{integration="webhook"\} (\S+)', metrics, re.M
        )
    )


def test_real_alertmanager_notices_become_one_analysis_per_episode(alerting, receiver):
    # Both rules fire: each episode is analysed by one report, a label value with a space included.
    wait_until(reports_completed("CheckoutErrorsHigh", "NodeLoadPresent"), timeout=90, between=run_queued)
    [checkout] = episodes("CheckoutErrorsHigh")
    [node] = episodes("NodeLoadPresent")
    assert checkout.labels["service"] == "Checkout API" and checkout.state == "firing"
    checkout_child = checkout.report.children.get()
    assert checkout_child.query.startswith(
        '只确认 service="Checkout API" 是否存在 CheckoutErrorsHigh 告警（instance='
    )
    node_child = node.report.children.get()
    assert re.fullmatch(
        r'只确认 job="node" 是否存在 NodeLoadPresent 告警（instance="127\.0\.0\.1:\d+"，job="node"），并给出相关证据',
        node_child.query,
    )
    lookup = checkout.report.tool_invocations.get(tool_name="lookup_knowledge")
    assert lookup.input == {"query": "CheckoutErrorsHigh", "top_k": 10}

    # The receiver got version "1" JSON for each completed report, with each alert's verdict.
    # Deliveries are queued tasks: the worker (run_queued) must run while waiting for them.
    wait_until(lambda: len(receiver.received) >= 2, timeout=30, between=run_queued)
    completed = list(receiver.received)
    bodies = {body["report_id"]: body for body in (r.body for r in completed)}
    assert set(bodies) == {checkout.report.session_id, node.report.session_id}
    for body in bodies.values():
        assert (body["version"], body["status"]) == ("1", "completed")
        [item] = body["alerts"]
        assert item["verdict"] in VERDICTS and item["output_type"] and item["summary"]
        assert item["session_url"].startswith(f"{alerting_url(body)}/c/")
    assert bodies[checkout.report.session_id]["alerts"][0]["labels"]["service"] == "Checkout API"

    # Alertmanager re-sends the firing groups (repeat_interval 3s): nothing new is analysed.
    sent = webhook_notifications(alerting)
    wait_until(lambda: webhook_notifications(alerting) >= sent + 2, timeout=30, between=run_queued)
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 2

    # The checkout rule resolves: its episode is closed on its report, no analysis starts.
    alerting.checkout_errors(0)
    wait_until(lambda: episodes("CheckoutErrorsHigh")[0].state == "resolved", timeout=60, between=run_queued)
    [closed] = episodes("CheckoutErrorsHigh")
    assert closed.ends_at is not None and closed.report_id == checkout.report_id
    report = DiagnosisSession.objects.get(pk=checkout.report_id)
    assert report.alert_scope["alerts"][0]["state"] == "resolved"
    assert "resolved（触发于" in report.answer and "，恢复于 " in report.answer
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 2
    wait_until(
        lambda: any(r.body["status"] == "resolved" for r in receiver.received), timeout=30, between=run_queued
    )
    resolved = list(receiver.received)
    [notice] = [r.body for r in resolved if r.body["status"] == "resolved"]
    assert notice["report_id"] == report.session_id
    assert notice["alerts"][0]["state"] == "resolved" and notice["alerts"][0]["verdict"] in VERDICTS

    # It fires again: a new startsAt is a new episode, analysed by a report of its own.
    alerting.checkout_errors(1)
    wait_until(reports_completed("CheckoutErrorsHigh", count=2), timeout=90, between=run_queued)
    first, again = episodes("CheckoutErrorsHigh")
    assert first.fingerprint == again.fingerprint and again.starts_at > first.starts_at
    assert again.report_id not in (first.report_id, node.report_id)
    # One analysis per episode, whatever Alertmanager re-sent meanwhile.
    for episode in AlertEpisode.objects.all():
        assert episode.report.children.count() == 1
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == AlertEpisode.objects.count() == 3


def alerting_url(body: dict) -> str:
    return body["url"].split("/c/")[0]


def run_due_schedules() -> None:
    """What the django-q2 cluster's scheduler does each beat: enqueue the schedules that are due, then
    run the queue."""
    scheduler(broker=get_broker())
    run_queued()


def test_a_flapping_alert_is_one_report_and_at_most_three_notices_then_settled(alerting, receiver, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "FLAP_WINDOW_MINUTES": 30,
        "FLAP_EPISODES": 3,
        "FLAP_REPEAT_MINUTES": 60,
        "FLAP_SETTLE_MINUTES": 0.05,
    }
    wait_until(reports_completed("CheckoutErrorsHigh"), timeout=90, between=run_queued)
    # Flapping: the rule resolves and fires again, episode after episode, as Alertmanager tells it.
    for number in range(2, 7):
        alerting.checkout_errors(0)
        wait_until(
            lambda: all(e.state == "resolved" for e in episodes("CheckoutErrorsHigh")),
            timeout=60,
            between=run_queued,
        )
        if number == 3:
            # The second report's own resolved notice may still be queued: deliver it first.
            run_queued()
            flapping_from = len(receiver.received)
        alerting.checkout_errors(1)
        wait_until(lambda n=number: len(episodes("CheckoutErrorsHigh")) >= n, timeout=60, between=run_queued)
        wait_until(reports_completed("CheckoutErrorsHigh", count=2), timeout=90, between=run_queued)
    run_queued()
    all_episodes = episodes("CheckoutErrorsHigh")
    assert len(all_episodes) == 6
    # Episodes 1 and 2 were analysed each; from the third the group has one report with the count.
    first = DiagnosisSession.objects.get(pk=all_episodes[0].report_id)
    assert {e.report_id for e in all_episodes[2:]} == {first.pk}
    assert first.alert_scope["alerts"][0]["flapping"]["episodes"] == 6
    assert first.alert_scope["alerts"][0]["flapping"]["state"] == "flapping"
    assert "反复触发 6 次" in first.answer
    # Four more episodes and their resolves, each re-sent by Alertmanager: at most three notices.
    during = [r.body for r in list(receiver.received)[flapping_from:]]
    assert len(during) <= 3, [body["status"] for body in during]
    assert [body["status"] for body in during] == ["flapping"]
    assert during[0]["alerts"][0]["flapping"]["episodes"] == 3

    # It stops: after the settle time the group is settled and its receivers are told once.
    alerting.checkout_errors(0)
    wait_until(lambda: episodes("CheckoutErrorsHigh")[-1].state == "resolved", timeout=60, between=run_queued)
    wait_until(
        lambda: any(r.body["status"] == "settled" for r in receiver.received),
        timeout=60,
        between=run_due_schedules,
    )
    [settled] = [r.body for r in receiver.received if r.body["status"] == "settled"]
    assert settled["report_id"] == first.session_id
    assert settled["alerts"][0]["flapping"] == {
        "episodes": 6,
        "since": first.alert_scope["alerts"][0]["flapping"]["since"],
        "state": "settled",
    }
