"""The sources against the real Prometheus, Alertmanager and node_exporter (Debian packages)."""

import pytest

from tests.integration.stack import silence
from tests.tools.support import record
from tools.numbers import number_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def prometheus(settings, stack):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": stack.prometheus_url, "DEMO_NOW": None}


def test_alerts_come_from_prometheus_with_their_current_value_and_expr(prometheus, stack, session):
    invocation = record(session, "query_metrics", alert_name="KubePodCrashLooping")

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
    invocation = record(session, "query_metrics", alert_name="NodeFilesystemAlmostFull")

    assert {alert["state"] for alert in invocation.output["alerts"]} == {"pending"}


def test_alertmanager_gives_the_list_and_silences_prometheus_the_value(settings, stack, session):
    silence(stack, "PostgresReplicationLag")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": stack.prometheus_url,
        "ALERTMANAGER_URL": stack.alertmanager_url,
        "DEMO_NOW": None,
    }

    invocation = record(session, "query_metrics", service="billing")

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
