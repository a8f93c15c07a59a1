"""The sources against the real Prometheus, Alertmanager and node_exporter (Debian packages)."""

import math
import time
from datetime import UTC, datetime
from itertools import pairwise

import pytest

from tests.integration.alerting import wait_until
from tests.integration.stack import silence
from tests.tools.support import record
from tools.numbers import number_text
from tools.promql import comparison_of
from tools.sources.prometheus import PrometheusSource

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def prometheus(settings, stack):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": stack.prometheus_url, "DEMO_NOW": None}


def test_alerts_come_from_prometheus_with_their_current_value_and_expr(prometheus, stack, session):
    invocation = record(session, "query_alerts", alert_name="KubePodCrashLooping")

    assert (invocation.source, invocation.source_location) == ("prometheus", stack.prometheus_url)
    [alert] = invocation.output["alerts"]
    live = stack.alert("KubePodCrashLooping")
    assert alert["service"] == "billing"
    assert alert["state"] == "firing"
    assert alert["expr"] == live["expr"] == 'node_load1{service="billing"} >= 0'
    assert alert["labels"]["job"] == "billing-node"
    [ref] = invocation.evidence_refs
    assert ref["raw_path"] == "$.alerts[0]"
    assert ref["text"].startswith(
        "KubePodCrashLooping firing service=billing: Pod of billing restarts repeatedly"
    )
    assert "当前值 " in ref["text"]


def test_a_pending_alert_is_listed_as_pending(prometheus, session):
    invocation = record(session, "query_alerts", alert_name="NodeFilesystemAlmostFull")

    assert {alert["state"] for alert in invocation.output["alerts"]} == {"pending"}


def test_alertmanager_gives_the_list_and_silences_prometheus_the_value(settings, stack, session):
    silence(stack, "PostgresReplicationLag")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": stack.prometheus_url,
        "ALERTMANAGER_URL": stack.alertmanager_url,
        "DEMO_NOW": None,
    }

    invocation = record(session, "query_alerts", service="billing")

    assert invocation.source == "alertmanager+prometheus"
    assert invocation.source_location == f"{stack.alertmanager_url} + {stack.prometheus_url}"
    by_name = {alert["alert_name"]: alert for alert in invocation.output["alerts"]}
    assert by_name["PostgresReplicationLag"]["state"] == "silenced"
    assert by_name["PostgresReplicationLag"]["silenced_by"]
    assert by_name["KubePodCrashLooping"]["state"] == "firing"
    live = stack.alert("PostgresReplicationLag")
    assert by_name["PostgresReplicationLag"]["value"] == live["value"]
    assert by_name["PostgresReplicationLag"]["expr"] == live["expr"]
    assert any(f"当前值 {number_text(live['value'])}" in ref["text"] for ref in invocation.evidence_refs)


def test_an_instant_promql_query_names_the_series_and_its_sample(prometheus, stack, session):
    invocation = record(session, "query_promql", query='node_memory_MemTotal_bytes{service="billing"}')

    assert invocation.success and invocation.source == "prometheus"
    [series] = invocation.output["series"]
    total = stack.prometheus("/api/v1/query", query='node_memory_MemTotal_bytes{service="billing"}')
    assert series["value"][1] == total["result"][0]["value"][1]
    [ref] = invocation.evidence_refs
    assert ref["raw_path"] == "$.series[0]"
    assert ref["text"].startswith(
        f'node_memory_MemTotal_bytes{{instance="{stack.node_exporter_url[7:]}",job="billing-node",service="billing"}} '
        f"当前值 {series['value'][1]}（"
    )


def test_a_range_query_keeps_at_most_120_points_and_names_min_and_max(prometheus, session):
    invocation = record(session, "query_promql", query='node_load1{service="billing"}', minutes=60)

    [series] = invocation.output["series"]
    assert invocation.output["result_type"] == "matrix"
    assert 1 <= len(series["values"]) <= 120
    assert "最新值 " in invocation.evidence_refs[0]["text"]


def test_a_promql_error_is_a_failed_call_with_prometheus_error_text(prometheus, session):
    invocation = record(session, "query_promql", query="rate(node_load1{service=")

    assert not invocation.success
    assert invocation.evidence_status == "failed"
    assert "prometheus" in invocation.error and "parse error" in invocation.error


def test_an_empty_promql_result_is_no_evidence(prometheus, session):
    invocation = record(session, "query_promql", query='up{service="no-such-thing"}')

    assert invocation.success
    assert invocation.evidence_status == "no_evidence"


def test_the_inventory_names_the_rules_alerts_and_service_label_values(settings, stack):
    from tools.clock import now
    from tools.sources import sources_inventory

    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": stack.prometheus_url,
        "ALERTMANAGER_URL": stack.alertmanager_url,
        "DEMO_NOW": None,
    }

    inventory = sources_inventory(now=now())

    # Rules (also the pending and the silenced one), the alert list, and the `service` label values.
    assert {
        "HighMemoryUsage",
        "PostgresReplicationLag",
        "KubePodCrashLooping",
        "NodeFilesystemAlmostFull",
    } <= (inventory.alerts)
    assert {"billing", "ledger-service"} <= inventory.services


def test_a_target_that_is_down_is_named_with_prometheus_last_error(prometheus, stack, session):
    invocation = record(session, "query_targets", state="down")

    assert invocation.success and invocation.source == "prometheus"
    [target] = invocation.output["targets"]
    assert (target["job"], target["health"]) == ("payments-exporter", "down")
    assert target["labels"]["service"] == "payments"
    assert "connection refused" in target["last_error"]
    assert target["last_scrape"]
    [ref] = invocation.evidence_refs
    assert ref == {
        "raw_path": "$.targets[0]",
        "text": f'job="payments-exporter" instance="{target["instance"]}" health=down '
        f"lastError: {target['last_error']}",
    }
    every = record(session, "query_targets")
    assert {t["job"]: t["health"] for t in every.output["targets"]} == {
        "ledger-node": "up",
        "billing-node": "up",
        "node": "up",
        "payments-exporter": "down",
        "prometheus": "up",
    }


def test_the_retention_is_read_from_runtimeinfo_and_reaches_range_outputs(prometheus, stack, session):
    # The stack runs Prometheus with `--storage.tsdb.retention.time=2d` (`RETENTION`).
    assert stack.prometheus("/api/v1/status/runtimeinfo")["storageRetention"] == "2d"
    assert PrometheusSource(stack.prometheus_url).retention_minutes() == 2 * 24 * 60

    invocation = record(session, "query_promql", query='node_load1{service="billing"}', minutes=10)

    assert invocation.output["retention_minutes"] == 2 * 24 * 60


def test_the_series_of_a_rules_comparison_is_a_query_prometheus_answers(stack):
    rules = {
        r["name"]: r for g in stack.prometheus("/api/v1/rules", type="alert")["groups"] for r in g["rules"]
    }
    live = rules["KubePodCrashLooping"]["query"]
    exprs = [
        live,
        rules["DbConnectionsSaturated"]["query"],
        '(sum by (service) (rate(node_load1{service=~"bill.*"}[1m])) / sum by (service) (rate(node_load1[1m]))) > 0.023',
        'histogram_quantile(0.99, sum by (le) (rate(x_bucket{path=~"/v1/.*\\\\.json", note="say \\"hi\\""}[5m]))) > 2.01',
        "max_over_time(node_load1[1m:5s] offset 10s) > bool 4 and on (service) up == 1",
        "0.5 < rate(node_load1[5m] @ 100)",
    ]

    for expr in exprs:
        comparison = comparison_of(expr)
        assert comparison is not None, expr
        assert stack.prometheus("/api/v1/query", query=comparison.series)["resultType"] == "vector", expr
    assert comparison_of(live).series == 'node_load1{service="billing"}'


def firing_episodes(stack, *, seconds: int, at: float | None = None) -> int:
    """Episodes counted from the raw `ALERTS` samples (one per rule evaluation, every second): a gap
    of more than a few evaluations between samples is a resolution, so the next sample starts another."""
    query = f'ALERTS{{alertname="DbConnectionsSaturated",alertstate="firing"}}[{seconds}s]'
    matrix = stack.prometheus("/api/v1/query", query=query, time=at or time.time())["result"]
    if not matrix:
        return 0
    times = [float(at) for at, _ in matrix[0]["values"]]
    return 1 + sum(1 for earlier, later in pairwise(times) if later - earlier > 5)


def test_a_flapping_alerts_episodes_are_counted_from_alerts_for_state(stack):
    window_minutes = 2
    # The rule fires 20 s in every 40 s: two episodes within a minute of any start.
    wait_until(lambda: firing_episodes(stack, seconds=window_minutes * 60) >= 2, timeout=65, every=1)
    # Whole seconds, as Prometheus rounds query times to milliseconds; rounded up, so that the
    # sample that just made the second episode is not cut off.
    now = float(math.ceil(time.time()))
    counted = firing_episodes(stack, seconds=window_minutes * 60, at=now)

    answer = PrometheusSource(stack.prometheus_url).query_promql(
        query=f'changes(ALERTS_FOR_STATE{{alertname="DbConnectionsSaturated"}}[{window_minutes}m])',
        minutes=0,
        now=datetime.fromtimestamp(now, tz=UTC),
    )

    # Each re-fire is a new activeAt: the changes of ALERTS_FOR_STATE, plus one, are the episodes.
    [series] = answer["series"]
    episodes = int(float(series["value"][1])) + 1
    assert abs(episodes - counted) <= 1, (episodes, counted)
    assert episodes >= 2
