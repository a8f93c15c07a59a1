"""`manage.py replay` against the real Prometheus and Alertmanager: a recorded session replays `same`
while nothing moved; after the textfile metric behind an alert moves, the alert's call is `changed`
with both values while the PromQL calls, asked again for their recorded time, stay `same`; with the
servers gone every call is `failed` and the command exits non-zero."""

import time
from datetime import timedelta

import httpx2
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from diagnosis.services.invocations import invocations_record
from tests.factories import DiagnosisSessionFactory
from tests.integration.alerting import SWITCH_METRIC, alerting_start, wait_until
from tests.integration.stack import free_port, missing_binaries

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ALERT = "CheckoutErrorsHigh"


@pytest.fixture
def alerting(tmp_path):
    missing = missing_binaries()
    if missing:
        pytest.fail(f"Debian packages missing: {', '.join(missing)} (`make test` installs them)")
    # Nobody listens for Alertmanager's notifications here: they fail and are retried, harmlessly.
    running = alerting_start(tmp_path, webhook_url=f"http://127.0.0.1:{free_port()}/", token="unused")
    yield running
    running.stop()


def alert_value(alerting) -> float | None:
    groups = alerting.stack.prometheus("/api/v1/rules", type="alert")["groups"]
    rule = next(r for g in groups for r in g["rules"] if r["name"] == ALERT)
    return float(rule["alerts"][0]["value"]) if rule["alerts"] else None


def in_alertmanager(alerting) -> bool:
    alerts = httpx2.get(f"{alerting.stack.alertmanager_url}/api/v2/alerts", timeout=5).json()
    return ALERT in {alert["labels"]["alertname"] for alert in alerts}


def replayed(session_id: str, capsys) -> list[str]:
    call_command("replay", session_id)
    return capsys.readouterr().out.splitlines()


def test_replay_says_same_then_names_the_value_that_moved_then_fails_with_the_stack_down(
    alerting, settings, capsys
):
    wait_until(lambda: alert_value(alerting) == 1 and in_alertmanager(alerting), timeout=60)
    # The calls are asked for a moment every sample of which Prometheus has already stored.
    time.sleep(3)
    asked_at = timezone.now() - timedelta(seconds=2)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": alerting.stack.prometheus_url,
        "ALERTMANAGER_URL": alerting.stack.alertmanager_url,
        "DEMO_NOW": asked_at.isoformat(),
    }
    session = DiagnosisSessionFactory()
    instant, window, alerts = invocations_record(
        session=session,
        round=1,
        calls=[
            ("query_promql", {"query": f'{SWITCH_METRIC}{{shop="eu"}}'}),
            ("query_promql", {"query": SWITCH_METRIC, "minutes": 1}),
            ("query_alerts", {"alert_name": ALERT}),
        ],
    )
    assert all(call.success for call in (instant, window, alerts))
    [sent] = instant.receipt_record.requests
    assert (sent.path, sent.query, sent.time) == (
        "/api/v1/query",
        f'{SWITCH_METRIC}{{shop="eu"}}',
        str(asked_at.timestamp()),
    )
    assert [(request.source, request.path) for request in alerts.receipt_record.requests] == [
        ("alertmanager", "/api/v2/alerts"),
        ("prometheus", "/api/v1/rules"),
    ]
    # The one reference the alert has, naming its value.
    [alert_ref] = [ref["text"] for ref in alerts.evidence_refs]
    assert alert_ref.endswith("当前值 1")

    lines = replayed(session.session_id, capsys)

    assert [line.rsplit(": ", 1)[1] for line in lines[:3]] == ["same", "same", "same"]
    assert lines[3] == "3 个调用：3 same，0 changed，0 failed"

    alerting.checkout_errors(5)
    wait_until(lambda: alert_value(alerting) == 5, timeout=30)

    lines = replayed(session.session_id, capsys)

    assert lines[0].endswith(": same") and lines[1].endswith(": same")
    assert lines[2].startswith(f"#{alerts.pk} query_alerts") and lines[2].endswith(": changed")
    assert lines[3] == f"    变化：{alert_ref} → {alert_ref.removesuffix('当前值 1')}当前值 5"
    assert lines[4] == "3 个调用：2 same，1 changed，0 failed"

    alerting.stop()

    with pytest.raises(CommandError, match="3 个调用重放失败"):
        call_command("replay", session.session_id)
    lines = capsys.readouterr().out.splitlines()
    assert [line.rsplit(": ", 1)[1] for line in lines if line.startswith("#")] == ["failed"] * 3
    assert f"prometheus {alerting.stack.prometheus_url}: 无法连接" in lines[1]
