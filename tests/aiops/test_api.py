"""The AIOps endpoints: Alertmanager's webhook and the one-click analysis, background work included.

The django-q task runs synchronously here (the cluster's `sync` mode), once the request's
transaction commits, exactly as a worker would run it after the 202.
"""

import json

import pytest
from django_q.conf import Conf
from django_q.models import OrmQ
from rest_framework.test import APIClient

from aiops.models import AlertEpisode
from diagnosis.models import DiagnosisSession
from tests.aiops.support import DEMO_NOW, TOKEN, alert, notification
from tests.factories import DiagnosisSessionFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db

WEBHOOK = "/api/alertmanager/webhook"
AI_OPS = "/api/ai_ops"


@pytest.fixture(autouse=True)
def aiops_settings(settings, monkeypatch):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
    }


@pytest.fixture
def committed(monkeypatch, django_capture_on_commit_callbacks):
    """`with committed():` commits the request's work, and its background task runs right then."""
    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def alertmanager(token: str | None = TOKEN) -> APIClient:
    client = APIClient()
    if token is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def post_notification(payload: dict, client: APIClient | None = None):
    return (client or alertmanager()).post(WEBHOOK, json.dumps(payload), content_type="application/json")


def test_notification_is_accepted_at_once_and_analysed_into_one_report(committed):
    with committed():
        response = post_notification(notification())

    assert response.status_code == 202
    assert set(response.data) == {"sessionId", "status", "traceUrl", "episodes"}
    assert response.data["episodes"] == {"new": 2, "known": 1, "resolved": 0}
    # Answered before the analysis ran: it only starts once the request has committed.
    assert response.data["status"] == DiagnosisSession.Status.PENDING
    assert response.data["traceUrl"] == f"/api/sessions/{response.data['sessionId']}/trace"
    parent = DiagnosisSession.objects.get(parent__isnull=True)
    assert parent.session_id == response.data["sessionId"]
    parent.refresh_from_db()
    assert (parent.kind, parent.status) == (DiagnosisSession.Kind.AIOPS, DiagnosisSession.Status.COMPLETED)
    report = parent.answer
    assert report.startswith(
        "# 告警分析报告\n\n**总体状态**：分析 2 条告警 — 2 条已核验，0 条有证据缺口，0 条已降级。"
    )
    assert "## 1. HighCPUUsage · payment-service" in report
    assert "## 2. HighMemoryUsage · order-service" in report
    assert "SlowResponse" not in report
    assert report.count("证据：「HighCPUUsage firing service=payment-service") == 1
    assert report.count("证据：「HighMemoryUsage firing service=order-service") == 1
    assert sorted(parent.children.values_list("verdict", flat=True)) == ["PASS", "PASS"]
    assert [(a["alert_name"], a["state"]) for a in parent.alert_scope["alerts"]] == [
        ("HighCPUUsage", "firing"),
        ("HighMemoryUsage", "firing"),
    ]
    assert parent.self_evaluation["aiops_rule_evaluation"]["verdict"] == "pass"


def test_same_notification_again_returns_the_same_session_and_starts_nothing(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True):
        first = post_notification(notification())
    queued = OrmQ.objects.count()

    with django_capture_on_commit_callbacks(execute=True):
        again = post_notification(notification())

    assert (again.status_code, again.data["sessionId"]) == (202, first.data["sessionId"])
    assert DiagnosisSession.objects.count() == 1
    assert OrmQ.objects.count() == queued == 1


def test_same_fingerprints_in_another_order_are_the_same_notification():
    payload = notification()
    shuffled = notification(*reversed(payload["alerts"]))

    first = post_notification(payload)
    again = post_notification(shuffled)

    assert again.data["sessionId"] == first.data["sessionId"]


def test_same_episodes_in_another_group_or_a_smaller_group_start_nothing():
    payload = notification()
    other_group = notification(group_key='{}/{severity="warning"}:{namespace="production"}')
    fewer_alerts = notification(*payload["alerts"][:2])

    responses = [post_notification(p) for p in (payload, other_group, fewer_alerts)]

    assert {r.data["sessionId"] for r in responses} == {responses[0].data["sessionId"]}
    assert [r.data["episodes"]["new"] for r in responses] == [2, 0, 0]
    assert DiagnosisSession.objects.count() == 1


@pytest.mark.parametrize("header", ["Bearer wrong-token", "Token " + TOKEN, "Bearer", "Basic dXNlcjpwYXNz"])
def test_wrong_token_is_refused_with_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = post_notification(notification(), client)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="alertmanager"'
    assert not DiagnosisSession.objects.exists()


def test_missing_token_is_refused_with_401_even_for_a_signed_in_user():
    client = alertmanager(token=None)
    client.force_login(StaffUserFactory())

    response = post_notification(notification(), client)

    assert response.status_code == 401
    assert not DiagnosisSession.objects.exists()


def test_webhook_does_not_exist_while_no_token_is_configured(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_TOKEN": None}

    response = post_notification(notification())

    assert response.status_code == 404
    assert not DiagnosisSession.objects.exists()


def without(payload: dict, path: str) -> dict:
    *parents, last = path.split(".")
    target = payload
    for key in parents:
        target = target[int(key)] if isinstance(target, list) else target[key]
    del target[last]
    return payload


@pytest.mark.parametrize(
    ("broken", "error_path"),
    [
        (lambda p: without(p, "alerts.1.labels.alertname"), ("alerts", "1", "labels", "alertname")),
        (lambda p: without(p, "alerts.0.fingerprint"), ("alerts", "0", "fingerprint")),
        (lambda p: without(p, "groupKey"), ("groupKey",)),
        (lambda p: p | {"version": "3"}, ("version",)),
        (lambda p: p | {"alerts": []}, ("alerts", "non_field_errors")),
        (lambda p: p | {"alerts": "HighCPUUsage"}, ("alerts", "non_field_errors")),
        (lambda p: p | {"status": "pending"}, ("status",)),
        (
            lambda p: {**p, "alerts": [{**p["alerts"][0], "startsAt": "yesterday"}]},
            ("alerts", "0", "startsAt"),
        ),
        (lambda p: {**p, "alerts": [{**p["alerts"][0], "labels": {}}]}, ("alerts", "0", "labels")),
        (
            lambda p: {**p, "alerts": [{**p["alerts"][0], "labels": {"alertname": 5}}]},
            ("alerts", "0", "labels"),
        ),
        (lambda p: {**p, "commonLabels": ["service"]}, ("commonLabels",)),
    ],
)
def test_malformed_notification_is_refused_with_400_naming_the_field(broken, error_path):
    response = post_notification(broken(notification()))

    assert response.status_code == 400
    errors = response.json()
    for key in error_path:
        errors = errors[key]
    assert errors and all(isinstance(message, str) for message in errors)
    assert not DiagnosisSession.objects.exists()


def test_a_nul_in_one_alert_is_replaced_and_every_alert_of_the_notification_is_analysed(committed):
    garbled = alert(
        "HighCPUUsage",
        "payment-service",
        fingerprint="a1b2c3d4e5f60718",
        labels={"service": "payment-service", "pod": "payment\x00-7f9c", "zone\ud800": "b"},
        annotations={"summary": "CPU\x00 high"},
    )
    payload = notification(garbled, alert("HighMemoryUsage", "order-service", fingerprint="b2c3d4e5f6071829"))

    with committed():
        response = post_notification(payload)

    assert response.status_code == 202
    assert response.data["episodes"] == {"new": 2, "known": 0, "resolved": 0}
    episode = AlertEpisode.objects.get(fingerprint="a1b2c3d4e5f60718")
    assert episode.labels == {
        "alertname": "HighCPUUsage",
        "service": "payment-service",
        "pod": "payment\ufffd-7f9c",
        "zone\ufffd": "b",
    }
    assert episode.annotations["summary"] == "CPU\ufffd high"
    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert report.status == DiagnosisSession.Status.COMPLETED
    assert sorted(report.children.values_list("verdict", flat=True)) == ["PASS", "PASS"]


def test_body_that_is_not_json_is_refused_with_400():
    response = alertmanager().post(WEBHOOK, "{not json", content_type="application/json")

    assert response.status_code == 400


def test_resolved_only_notification_is_recorded_and_nothing_is_analysed(committed):
    payload = notification(
        alert("SlowResponse", "user-service", status="resolved", fingerprint="c3d4e5f60718293a")
    )

    with committed():
        response = post_notification(payload)

    assert response.status_code == 202
    assert response.data == {
        "sessionId": None,
        "status": None,
        "traceUrl": None,
        "episodes": {"new": 0, "known": 1, "resolved": 0},
    }
    assert not DiagnosisSession.objects.exists()
    episode = AlertEpisode.objects.get()
    assert (episode.fingerprint, episode.state, episode.report) == ("c3d4e5f60718293a", "resolved", None)


# --- POST /api/ai_ops ---


def test_ai_ops_analyses_every_firing_alert_for_the_signed_in_user(committed):
    user = UserFactory()
    client = APIClient()
    client.force_authenticate(user)

    with committed():
        response = client.post(AI_OPS, {}, format="json")

    assert response.status_code == 202
    session = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert (session.owner, session.kind, session.status) == (
        user,
        DiagnosisSession.Kind.AIOPS,
        DiagnosisSession.Status.COMPLETED,
    )
    assert sorted(session.children.values_list("owner", flat=True)) == [user.pk] * 3
    for figure in ("92%", "91%", "3.8GB/4GB", "4.2s"):
        assert figure in session.answer


def test_ai_ops_filter_limits_the_alerts(committed):
    client = APIClient()
    client.force_authenticate(UserFactory())

    with committed():
        response = client.post(
            AI_OPS, {"alert_names": ["SlowResponse"], "services": ["user-service"]}, format="json"
        )

    session = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert list(session.children.values_list("query", flat=True)) == [
        '只确认 service="user-service" 是否存在 SlowResponse 告警，并给出相关证据'
    ]
    assert "HighCPUUsage" not in session.answer


def test_ai_ops_over_the_rate_limit_answers_429_and_starts_nothing(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "10/min"}
    user = UserFactory()
    DiagnosisSessionFactory(owner=user)
    client = APIClient()
    client.force_authenticate(user)

    response = client.post(AI_OPS, {}, format="json")

    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response.json()["detail"].startswith("发起诊断过于频繁（每分钟最多 10 次）")
    assert not DiagnosisSession.objects.filter(kind=DiagnosisSession.Kind.AIOPS).exists()


def test_ai_ops_refuses_a_malformed_filter_and_anonymous_callers():
    client = APIClient()
    assert client.post(AI_OPS, {}, format="json").status_code in (401, 403)
    client.force_authenticate(UserFactory())

    response = client.post(AI_OPS, {"alert_names": "HighCPUUsage; DROP"}, format="json")

    assert response.status_code == 400
    assert "alert_names" in response.json()
    assert not DiagnosisSession.objects.exists()
