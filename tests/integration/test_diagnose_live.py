"""Done-when of the sources: `manage.py diagnose --json` pointed at the live stack
answers with what Prometheus reports, never with demo-world text, and names a source that is down."""

import json

import pytest
from django.core.management import call_command

from tests.integration.stack import free_port
from tools.numbers import number_text
from tools.sources.demo import DATA_DIR

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def demo_world_texts() -> set[str]:
    """Every service name, instance and description of the demo world: none may reach these answers."""
    alerts = json.loads((DATA_DIR / "alerts.json").read_text(encoding="utf-8"))
    logs = json.loads((DATA_DIR / "logs.json").read_text(encoding="utf-8"))
    texts = {alert["description"] for alert in alerts} | {log["message"] for log in logs}
    texts |= {alert["service"] for alert in alerts} | {log["service"] for log in logs}
    return texts | {log["instance"] for log in logs} | {"演示数据"}


def diagnose(question: str, capsys) -> dict:
    call_command("diagnose", question, "--json")
    return json.loads(capsys.readouterr().out)


def assert_no_demo_world(trace: dict) -> None:
    dumped = json.dumps(trace, ensure_ascii=False)
    assert not [text for text in demo_world_texts() if text in dumped]
    assert {invocation["source"] for invocation in trace["tool_invocations"]} - {""} <= {
        "prometheus",
        "loki",
        "runbooks",
    }


def test_a_narrow_alert_question_cites_the_value_prometheus_reports(team_sources, stack, capsys):
    trace = diagnose("只确认 ledger-service 是否存在 HighMemoryUsage 告警", capsys)

    live = stack.alert("HighMemoryUsage")
    value = number_text(live["value"])
    assert trace["session"]["status"] == "COMPLETED"
    assert trace["session"]["output_type"] == "NORMAL"
    assert f"当前值 {value}" in trace["session"]["answer"]
    [metrics] = [i for i in trace["tool_invocations"] if i["tool_name"] == "query_alerts"]
    assert metrics["source"] == "prometheus"
    assert metrics["source_location"] == stack.prometheus_url
    assert metrics["output"]["alerts"][0]["value"] == live["value"]
    # The alert's own expr re-evaluated: the same sample, now as a series.
    [sample] = [i for i in trace["tool_invocations"] if i["input"] == {"query": live["expr"]}]
    assert sample["tool_name"] == "query_promql"
    assert sample["output"]["series"][0]["value"][1] == value
    assert_no_demo_world(trace)


def test_a_metric_question_yields_a_promql_invocation_with_the_real_sample(team_sources, stack, capsys):
    trace = diagnose("ledger-service 的内存情况怎么样", capsys)

    query = 'node_memory_MemAvailable_bytes{service="ledger-service"}'
    [invocation] = [i for i in trace["tool_invocations"] if i["input"].get("query") == query]
    assert invocation["tool_name"] == "query_promql"
    assert invocation["source"] == "prometheus"
    [series] = invocation["output"]["series"]
    at, value = series["value"]
    # Prometheus asked again for that very instant returns that very sample.
    again = stack.prometheus("/api/v1/query", query=query, time=at)["result"][0]["value"][1]
    assert value == again
    [ref] = invocation["retrieval_details"]["evidence_refs"]
    assert f"当前值 {number_text(value)}" in ref["text"]
    assert number_text(value) in trace["session"]["answer"]
    assert_no_demo_world(trace)


def test_a_configured_source_that_is_down_is_a_failed_call_naming_it(settings, team_sources, capsys):
    down = f"http://127.0.0.1:{free_port()}"
    settings.DIAGNOSIS = team_sources | {"PROMETHEUS_URL": down, "SOURCE_TIMEOUT": 2.0}

    trace = diagnose("只确认 ledger-service 是否存在 HighMemoryUsage 告警", capsys)

    assert trace["session"]["status"] == "COMPLETED"
    [metrics] = [i for i in trace["tool_invocations"] if i["tool_name"] == "query_alerts"]
    assert metrics["success"] is False
    assert metrics["evidence_status"] == "failed"
    assert metrics["source"] == "prometheus"
    assert f"prometheus {down}" in metrics["error"]
    assert "无法连接" in metrics["error"]
    assert "数据源 prometheus 不可用" in trace["session"]["answer"]
    assert not [i for i in trace["tool_invocations"] if i["source"] == "demo"]
    assert_no_demo_world(trace)


def test_a_runbook_question_quotes_the_steps_of_the_runbook_the_alerts_runbook_url_names(
    team_sources, stack, capsys
):
    trace = diagnose("PostgresReplicationLag 的 runbook 第一步要检查什么？", capsys)

    conclusion = trace["session"]["answer"].splitlines()[0]
    assert conclusion.startswith(
        "结论：处理手册《Postgres replication lag · Diagnosis》：Compare pg_last_wal_replay_lsn"
    )
    assert conclusion.endswith("来源 runbooks/databases/postgres-replication.md")
    [lookup] = [i for i in trace["tool_invocations"] if i["tool_name"] == "lookup_knowledge"][:1]
    assert lookup["source"] == "runbooks"
    assert_no_demo_world(trace)
