"""A flapping alert is one story: from the third episode within the flap window the
episodes join one report with their count and latest state, and its receivers get one notice per
state of the group (flapping, still flapping at most every repeat interval, settled), not one per
episode. On the demo world's HighCPUUsage and on a node_exporter alert with only instance and job."""

import pytest
from django_q.conf import Conf
from django_q.models import Schedule

from aiops.models import AlertEpisode, ReportDelivery
from aiops.services import SETTLE_TASK, aiops_run, aiops_start, flap_settle_check
from diagnosis.models import DiagnosisSession
from tests.aiops.support import DEMO_NOW, TOKEN, alert, flap
from tests.notify_receiver import NotifyReceiver
from tests.tools.support import use_source
from tools.evidence.alerts.source import AlertSource

pytestmark = pytest.mark.django_db

ALERTS = {
    "demo": lambda **kwargs: alert(
        "HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718", **kwargs
    ),
    "node": lambda **kwargs: alert(
        "NodeLoadHigh",
        "",
        fingerprint="0b0e000000000002",
        labels={"instance": "web-1:9100", "job": "node", "severity": "warning"},
        **kwargs,
    ),
}


@pytest.fixture
def receiver():
    with NotifyReceiver() as receiver:
        yield receiver


@pytest.fixture(autouse=True)
def flap_settings(settings, receiver):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
        "NOTIFY_URL": receiver.url,
        "FLAP_WINDOW_MINUTES": 30,
        "FLAP_EPISODES": 3,
        "FLAP_REPEAT_MINUTES": 60,
    }


@pytest.fixture
def committed(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def notices(receiver) -> list[dict]:
    return [request.body for request in receiver.received]


@pytest.mark.parametrize("world", ["demo", "node"])
def test_a_flapping_alert_is_one_report_with_its_count_and_one_notice_per_state(receiver, committed, world):
    make = ALERTS[world]
    flap(make, committed, range(2))
    before = len(receiver.received)
    # Two episodes are two analyses, each told (completed, resolved): not yet flapping.
    assert [n["status"] for n in notices(receiver)] == ["completed", "resolved"] * 2

    flap(make, committed, range(2, 5))

    first = AlertEpisode.objects.order_by("starts_at").first().report
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 2
    assert set(
        AlertEpisode.objects.filter(starts_at__gte="2026-11-29T06:32:00Z").values_list("report", flat=True)
    ) == {first.pk}
    first.refresh_from_db()
    [entry] = first.alert_scope["alerts"]
    assert entry["flapping"] == {"episodes": 5, "since": "2026-11-29T06:30:00+00:00", "state": "flapping"}
    assert entry["state"] == "resolved"
    assert "反复触发**：自 2026-11-29 14:30:00 起反复触发 5 次，仍在反复" in first.answer
    # Three more episodes, six more firing and resolved notices from Alertmanager: one notice.
    during = notices(receiver)[before:]
    assert [n["status"] for n in during] == ["flapping"]
    assert during[0]["version"] == "1"
    assert during[0]["alerts"][0]["flapping"] == {
        "episodes": 3,
        "since": "2026-11-29T06:30:00+00:00",
        "state": "flapping",
    }
    # Each resolve of the group scheduled its settle check.
    assert Schedule.objects.filter(func=SETTLE_TASK).count() == 3

    latest = AlertEpisode.objects.order_by("starts_at").last()
    earlier = AlertEpisode.objects.order_by("starts_at")[3]
    with committed():
        # A check scheduled before a later episode started finds the group still going.
        assert flap_settle_check(report_pk=first.pk, episode_pk=earlier.pk) is False
        assert flap_settle_check(report_pk=first.pk, episode_pk=latest.pk) is True

    first.refresh_from_db()
    assert first.alert_scope["alerts"][0]["flapping"]["state"] == "settled"
    assert "反复触发 5 次，已平息" in first.answer
    settled = notices(receiver)[-1]
    assert settled["status"] == "settled"
    assert settled["alerts"][0]["flapping"]["state"] == "settled"
    assert list(first.deliveries.order_by("id").values_list("event", flat=True)) == [
        "completed",
        "resolved",
        "flapping",
        "settled",
    ]


def test_a_group_still_flapping_is_told_again_after_the_repeat_interval(settings, receiver, committed):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"FLAP_REPEAT_MINUTES": 0}

    flap(ALERTS["demo"], committed, range(5))

    events = list(ReportDelivery.objects.order_by("id").values_list("event", flat=True))
    assert events.count("flapping") == 3  # the third, fourth and fifth episodes
    assert "resolved" not in events[4:]


def test_episodes_further_apart_than_the_window_are_analysed_each(settings, receiver, committed):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"FLAP_WINDOW_MINUTES": 1}

    flap(ALERTS["demo"], committed, range(4))

    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 4
    assert not ReportDelivery.objects.filter(event__in=["flapping", "settled"]).exists()


class FlappingAlertSource(AlertSource):
    """An alert source (a plugin, as a team's own would be) whose one firing alert is the flapping one."""

    def provenance(self):
        return "alertmanager", "http://alertmanager.test:9093"

    def query_alerts(self, *, service, alert_name, now):
        return [
            {
                "alert_name": "HighCPUUsage",
                "service": "payment-service",
                "state": "firing",
                "severity": "critical",
                "description": "",
                "active_at": "2026-11-29 14:34:00",
                "duration": "1m",
                "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
                "value": "92",
                "fingerprint": "a1b2c3d4e5f60718",
            }
        ]


def test_ai_ops_marks_an_alert_that_is_flapping_now(settings, committed):
    flap(ALERTS["demo"], committed, range(4))
    use_source(settings, FlappingAlertSource, AlertSource)

    session = aiops_run(session_pk=aiops_start().pk)

    [entry] = session.alert_scope["alerts"]
    assert entry["flapping"] == {"episodes": 4, "since": "2026-11-29T06:30:00+00:00", "state": "flapping"}
    assert "**反复触发**：自 2026-11-29 14:30:00 起反复触发 4 次，仍在反复。" in session.answer
    assert "| firing · 反复触发 4 次 |" in session.answer
