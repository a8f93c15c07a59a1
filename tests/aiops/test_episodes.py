"""Alertmanager's notifications as episodes: each firing of an alert analysed once,
resolves closed on its report, any label accepted, the webhook's own bounds.

Besides the demo world, a second world with other names: a `Checkout API` service (a label value
with a space) and a node_exporter alert that has only instance and job.
"""

import json
import re

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django_q.conf import Conf
from rest_framework.test import APIClient

from aiops.models import AlertEpisode, FailedTokenAttempt
from aiops.serializers import AlertmanagerNotificationSerializer
from aiops.services import alertmanager_notification_receive
from diagnosis.models import DiagnosisSession
from tests.aiops.support import DEMO_NOW, TOKEN, alert, notification
from tests.concurrency import run_concurrently
from tests.databases import skip_unless_postgresql

pytestmark = pytest.mark.django_db

WEBHOOK = "/api/alertmanager/webhook"
LATER = "2026-11-29T07:10:00.000Z"


@pytest.fixture(autouse=True)
def aiops_settings(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
    }


@pytest.fixture
def committed(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def post(payload: dict, *, token: str = TOKEN):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.post(WEBHOOK, json.dumps(payload), content_type="application/json")


def cpu(**kwargs) -> dict:
    return alert("HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718", **kwargs)


def memory(**kwargs) -> dict:
    return alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829", **kwargs)


def checkout(**kwargs) -> dict:
    labels = {"service": "Checkout API", "namespace": "shop", "pod": "checkout-7d9f", "team": "支付 & 结算"}
    return alert(
        "CheckoutLatencyHigh", "Checkout API", fingerprint="c0ffee0000000001", labels=labels, **kwargs
    )


def node_load(**kwargs) -> dict:
    labels = {"instance": "web-1:9100", "job": "node", "severity": "warning"}
    return alert("NodeLoadHigh", "", fingerprint="0b0e000000000002", labels=labels, **kwargs)


def test_resolved_notice_closes_the_episodes_on_the_existing_report_and_starts_nothing(committed):
    with committed():
        first = post(notification(cpu(), memory()))
    report = DiagnosisSession.objects.get(session_id=first.data["sessionId"])

    with committed():
        resolved = post(notification(cpu(status="resolved"), memory(status="resolved")))

    assert resolved.status_code == 202
    assert resolved.data["sessionId"] == report.session_id
    assert resolved.data["episodes"] == {"new": 0, "known": 0, "resolved": 2}
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 1
    episodes = AlertEpisode.objects.order_by("alert_name")
    assert [(e.alert_name, e.state, e.ends_at.isoformat(), e.report_id) for e in episodes] == [
        ("HighCPUUsage", "resolved", "2026-11-29T06:58:00+00:00", report.pk),
        ("HighMemoryUsage", "resolved", "2026-11-29T06:58:00+00:00", report.pk),
    ]
    report.refresh_from_db()
    assert [(a["state"], a["ends_at"]) for a in report.alert_scope["alerts"]] == [
        ("resolved", "2026-11-29T06:58:00+00:00"),
    ] * 2
    table = [line for line in report.answer.splitlines() if line.startswith("| 1 ")]
    told = "触发于 2026-11-29 14:35:00，恢复于 2026-11-29 14:58:00，持续 23 分"
    assert f"resolved（{told}）" in table[0]
    # Resolved says resolved: when, how long, and the findings in the past tense.
    assert f"**已恢复**：{told}。以下是告警触发期间的分析，不是当前状态。" in report.answer
    assert "**触发期间已核验的发现**" in report.answer
    unquoted = re.sub(r"「[^」]*」", "", report.answer)
    assert "当前存在" not in unquoted and "（firing）" not in unquoted
    assert "确认其是否仍在触发" not in report.answer
    for scope_alert in report.alert_scope["alerts"]:
        assert scope_alert["summary"].startswith(f"已恢复：{told}；触发期间的分析 ")
        assert "当前存在" not in re.sub(r"「[^」]*」", "", scope_alert["summary"])


def test_refire_with_a_new_starts_at_is_a_new_episode_and_is_analysed(committed):
    with committed():
        first = post(notification(cpu()))
        post(notification(cpu(status="resolved")))
        again = post(notification(cpu(starts_at=LATER)))

    assert again.data["episodes"]["new"] == 1
    assert again.data["sessionId"] != first.data["sessionId"]
    assert AlertEpisode.objects.filter(fingerprint="a1b2c3d4e5f60718").count() == 2
    refire = DiagnosisSession.objects.get(session_id=again.data["sessionId"])
    assert refire.status == DiagnosisSession.Status.COMPLETED
    assert [a["starts_at"] for a in refire.alert_scope["alerts"]] == ["2026-11-29T07:10:00+00:00"]


def test_group_mixing_analysed_and_new_episodes_analyses_only_the_new_ones(committed):
    with committed():
        post(notification(cpu()))
        mixed = post(notification(cpu(), memory()))

    assert mixed.data["episodes"] == {"new": 1, "known": 1, "resolved": 0}
    report = DiagnosisSession.objects.get(session_id=mixed.data["sessionId"])
    assert [a["alert_name"] for a in report.alert_scope["alerts"]] == ["HighMemoryUsage"]
    assert list(report.children.values_list("query", flat=True)) == [
        '只确认 service="order-service" 是否存在 HighMemoryUsage 告警（namespace="production"），并给出相关证据'
    ]
    assert "HighCPUUsage" not in report.answer


def test_resolve_seen_first_does_not_absorb_later_firings(committed):
    with committed():
        post(notification(memory(status="resolved")))
        firing = post(notification(memory(starts_at=LATER)))

    assert firing.data["episodes"]["new"] == 1
    report = DiagnosisSession.objects.get(session_id=firing.data["sessionId"])
    assert report.children.count() == 1
    assert AlertEpisode.objects.get(starts_at="2026-11-29T07:10:00Z").report == report


def test_any_label_prometheus_allows_is_accepted_and_named_in_the_question(committed):
    with committed():
        response = post(notification(checkout(), node_load()))

    assert response.status_code == 202
    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert sorted(report.children.values_list("query", flat=True)) == [
        # No service label: job names the service (DIAGNOSIS_SERVICE_LABELS = service,app,job).
        '只确认 job="node" 是否存在 NodeLoadHigh 告警（instance="web-1:9100"，job="node"），并给出相关证据',
        '只确认 service="Checkout API" 是否存在 CheckoutLatencyHigh 告警（namespace="shop"，pod="checkout-7d9f"），'
        "并给出相关证据",
    ]
    labels = {a["alert_name"]: a["labels"] for a in report.alert_scope["alerts"]}
    assert labels["CheckoutLatencyHigh"]["team"] == "支付 & 结算"
    # NodeLoadHigh carries severity=warning, CheckoutLatencyHigh none: the warning comes first (by severity).
    assert "## 1. NodeLoadHigh · node" in report.answer
    assert "## 2. CheckoutLatencyHigh · Checkout API" in report.answer
    assert report.status == DiagnosisSession.Status.COMPLETED


def test_service_labels_are_configurable(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"SERVICE_LABELS": ["app"]}
    payload = notification(
        alert("QueueBacklog", "", fingerprint="0a0a0a0a0a0a0a0a", labels={"app": "ledger", "job": "kafka"})
    )

    report = DiagnosisSession.objects.get(session_id=post(payload).data["sessionId"])

    assert report.alert_scope["alerts"][0]["service"] == "ledger"
    assert report.alert_scope["alerts"][0]["identity"] == {"job": "kafka"}


def test_alerts_over_the_limit_are_listed_as_not_analysed(settings, committed):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"AIOPS_MAX_ALERTS": 2}

    with committed():
        response = post(notification(checkout(), node_load(), memory()))

    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert report.children.count() == 2
    skipped = [a for a in report.alert_scope["alerts"] if not a["analysed"]]
    assert [(a["alert_name"], a["not_analysed_reason"]) for a in skipped] == [
        ("HighMemoryUsage", "超出单次分析上限（2 条）")
    ]
    assert "另有 1 条未分析" in report.answer.splitlines()[2]
    assert '## 未分析的告警\n\n- `HighMemoryUsage（order-service） namespace="production"`' in report.answer


def test_each_alerts_runbook_is_looked_up_by_its_runbook_url_or_its_name(committed):
    url = {"runbook_url": "https://wiki.example/ops/runbooks/HighMemoryUsage.md"}
    payload = notification(
        alert("PodMemoryPressure", "order-service", fingerprint="1010101010101010", annotations=url),
        node_load(),
    )

    with committed():
        response = post(payload)

    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    lookups = report.tool_invocations.filter(tool_name="lookup_knowledge").order_by("id")
    assert [lookup.input["query"] for lookup in lookups] == [
        "HighMemoryUsage PodMemoryPressure",
        "NodeLoadHigh",
    ]
    section = report.answer.split("## 1. PodMemoryPressure")[1].split("## 2.")[0]
    assert "**处理手册**（排查参考，不是当前事实）" in section
    assert f"（来源：lookup_knowledge #{lookups[0].pk} " in section


def test_notification_over_the_size_limit_is_refused_with_413_and_nothing_is_stored(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_MAX_BYTES": 4000}
    payload = notification(*[node_load() | {"fingerprint": f"{n:016x}"} for n in range(20)])
    assert len(json.dumps(payload)) > 4000

    response = post(payload)

    assert response.status_code == 413
    assert "4000 字节上限" in response.json()["detail"]
    assert not AlertEpisode.objects.exists() and not DiagnosisSession.objects.exists()


def test_webhook_is_rate_limited_per_token(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_RATE": "2/min"}

    statuses = [post(notification(cpu(starts_at=f"2026-11-29T07:0{n}:00Z"))).status_code for n in range(3)]

    assert statuses == [202, 202, 429]
    assert AlertEpisode.objects.count() == 2
    # Authentication comes first: a wrong token is refused as such, never counted.
    assert post(notification(cpu()), token="wrong").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_concurrent_deliveries_of_one_notice_create_one_analysis():
    skip_unless_postgresql(why="the race needs concurrent writers")
    payload = notification(checkout(), node_load(), memory())

    def receive():
        serializer = AlertmanagerNotificationSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        return alertmanager_notification_receive(notification=serializer.validated_data)

    outcomes = run_concurrently(receive, threads=6)

    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert sorted(o.new for o in outcomes) == [0, 0, 0, 0, 0, 3]
    assert len({o.session.pk for o in outcomes}) == 1
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 1
    assert AlertEpisode.objects.filter(report=outcomes[0].session).count() == 3


@pytest.mark.django_db(transaction=True)
def test_concurrent_deliveries_of_one_resolve_close_the_episode_once():
    skip_unless_postgresql(why="the race needs concurrent writers")
    AlertEpisode.objects.create(
        fingerprint="c0ffee0000000001", starts_at="2026-11-29T06:35:00Z", state="firing", alert_name="X"
    )
    payload = notification(checkout(status="resolved"))

    def receive():
        serializer = AlertmanagerNotificationSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        return alertmanager_notification_receive(notification=serializer.validated_data)

    outcomes = run_concurrently(receive, threads=4)

    assert sorted(o.resolved for o in outcomes) == [0, 0, 0, 1]
    assert AlertEpisode.objects.get().state == "resolved"


def many(count: int, *, offset: int = 0, **kwargs) -> list[dict]:
    """`count` alerts of the second world's shape, one fingerprint each."""
    return [checkout(**kwargs) | {"fingerprint": f"{offset + n:016x}"} for n in range(count)]


def queries_of(payload: dict) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert post(payload).status_code == 202
    return [query["sql"] for query in captured.captured_queries]


def test_a_resend_reads_no_report_body_in_a_constant_number_of_queries():
    post(notification(*many(5)))
    post(notification(*many(60, offset=100)))
    report_columns = ('"answer"', '"alert_scope"', '"self_evaluation"')

    few, lots = queries_of(notification(*many(5))), queries_of(notification(*many(60, offset=100)))

    assert len(few) == len(lots)
    assert not [sql for sql in lots if any(column in sql for column in report_columns)]
    assert not [sql for sql in lots if "FOR UPDATE" in sql or sql.startswith(("INSERT", "UPDATE"))]


def test_a_first_delivery_creates_its_episodes_in_a_constant_number_of_queries():
    few, lots = queries_of(notification(*many(5))), queries_of(notification(*many(60, offset=100)))

    assert len(few) == len(lots)
    assert AlertEpisode.objects.count() == 65
    assert DiagnosisSession.objects.filter(parent__isnull=True).count() == 2


def test_a_resend_with_one_resolved_alert_closes_only_it():
    first = post(notification(*many(20)))
    alerts = many(20)
    alerts[7] = checkout(status="resolved") | {"fingerprint": alerts[7]["fingerprint"]}

    again = post(notification(*alerts))

    assert again.data["episodes"] == {"new": 0, "known": 19, "resolved": 1}
    assert again.data["sessionId"] == first.data["sessionId"]
    assert list(AlertEpisode.objects.filter(state="resolved").values_list("fingerprint", flat=True)) == [
        f"{7:016x}"
    ]


def test_an_alert_twice_in_one_notice_is_one_episode():
    response = post(notification(memory(), memory(), cpu()))

    assert response.data["episodes"] == {"new": 2, "known": 1, "resolved": 0}
    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert [a["alert_name"] for a in report.alert_scope["alerts"]] == ["HighMemoryUsage", "HighCPUUsage"]


def post_from(address: str, payload: dict, *, token: str):
    client = APIClient(REMOTE_ADDR=address)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.post(WEBHOOK, json.dumps(payload), content_type="application/json")


def test_wrong_tokens_are_rate_limited_per_address_and_then_even_the_right_one_is_refused(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_FAILED_TOKEN_RATE": "3/min"}
    payload = notification(cpu())

    guesses = [post_from("203.0.113.7", payload, token=f"guess-{n}").status_code for n in range(5)]
    right_after = post_from("203.0.113.7", payload, token=TOKEN)
    elsewhere = post_from("198.51.100.2", payload, token=TOKEN)

    assert guesses == [401, 401, 401, 429, 429]
    assert right_after.status_code == 429 and int(right_after.headers["Retry-After"]) > 0
    assert elsewhere.status_code == 202
    assert AlertEpisode.objects.count() == 1


def web_process(name: str):
    """Requests as one gunicorn process serves them: with its own memory, a local cache of its own."""
    return override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": name}}
    )


def test_wrong_tokens_are_counted_once_across_web_processes_without_redis(settings):
    payload = notification(cpu())
    statuses = []
    for attempt in range(12):
        with web_process(f"web-{attempt % 2}"):
            statuses.append(post_from("203.0.113.7", payload, token=f"guess-{attempt}").status_code)

    # The default rate, 10 wrong tokens a minute: the 11th attempt is refused whichever process takes it.
    assert settings.DIAGNOSIS["ALERTMANAGER_FAILED_TOKEN_RATE"] == "10/min"
    assert statuses == [401] * 10 + [429] * 2
    assert FailedTokenAttempt.objects.count() == 10


def test_a_malformed_authorization_header_counts_as_a_failed_attempt(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_FAILED_TOKEN_RATE": "1/min"}
    client = APIClient(REMOTE_ADDR="203.0.113.9")
    client.credentials(HTTP_AUTHORIZATION="Basic abc")

    statuses = [client.post(WEBHOOK, "{}", content_type="application/json").status_code for _ in range(2)]

    assert statuses == [401, 429]


def test_alertmanagers_own_notifications_never_use_up_the_failed_attempts(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_FAILED_TOKEN_RATE": "1/min"}

    statuses = [post(notification(cpu(starts_at=f"2026-11-29T07:0{n}:00Z"))).status_code for n in range(3)]

    assert statuses == [202, 202, 202]
