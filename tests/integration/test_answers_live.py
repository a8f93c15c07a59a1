"""Done-when of the asks on the live stack: each question's `结论` line carries what
Prometheus holds right now, read again here by the test itself."""

import json
import time

import pytest
from django.core.management import call_command

from tools.numbers import number_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
FLAPPING = "DbConnectionsSaturated"


def answer_of(question: str, capsys) -> tuple[dict, list[str]]:
    call_command("diagnose", question, "--json")
    trace = json.loads(capsys.readouterr().out)
    conclusions = [line for line in trace["session"]["answer"].splitlines() if line.startswith("结论：")]
    return trace, conclusions


def test_a_value_question_states_the_live_sample(team_sources, stack, capsys):
    [series] = stack.prometheus("/api/v1/query", query='node_memory_MemTotal_bytes{service="billing"}')[
        "result"
    ]

    trace, [conclusion] = answer_of("billing 的 node_memory_MemTotal_bytes 当前是多少？", capsys)

    assert trace["session"]["output_type"] == "NORMAL"
    assert f"当前值 {number_text(series['value'][1])}" in conclusion
    assert 'service="billing"' in conclusion and "来源 prometheus" in conclusion


def test_a_threshold_question_states_the_rules_comparison(team_sources, stack, capsys):
    expr = stack.alert("PostgresReplicationLag")["expr"]
    series, number = expr.split(" > ")

    trace, conclusions = answer_of("PostgresReplicationLag 的阈值是多少？", capsys)

    [threshold] = [line for line in conclusions if "阈值：" in line]
    assert f"{series} > {number}" in threshold
    assert trace["session"]["output_type"] == "NORMAL"


def test_a_trend_question_reads_a_range_with_its_min_and_max(team_sources, stack, capsys):
    [series] = stack.prometheus(
        "/api/v1/query", query='node_memory_MemTotal_bytes{service="ledger-service"}'
    )["result"]
    total = number_text(series["value"][1])

    trace, [conclusion] = answer_of("过去 5 分钟 ledger-service 的 node_memory_MemTotal_bytes 趋势", capsys)

    assert "过去 5 分钟" in conclusion
    assert f"最小 {total}，最大 {total}" in conclusion
    [promql] = [
        i for i in trace["tool_invocations"] if i["tool_name"] == "query_promql" and i["input"].get("minutes")
    ]
    assert promql["input"]["minutes"] == 5 and promql["output"]["result_type"] == "matrix"


def firing_episodes(stack, minutes: int) -> int:
    """Episodes counted by the test itself: runs of raw `ALERTS` samples without a gap."""
    query = f'ALERTS{{alertname="{FLAPPING}",alertstate="firing"}}[{minutes}m]'
    result = stack.prometheus("/api/v1/query", query=query)["result"]
    stamps = [float(ts) for series in result for ts, _ in series["values"]]
    return sum(
        1
        for earlier, later in zip([None, *stamps], stamps, strict=False)
        if not earlier or later - earlier > 2
    )


def test_a_flapping_alert_is_counted_as_alerts_history_has_it(team_sources, stack, capsys):
    deadline = time.monotonic() + 120
    while firing_episodes(stack, 60) < 3 and time.monotonic() < deadline:
        time.sleep(2)

    _trace, [conclusion] = answer_of(f"{FLAPPING} 是不是在反复触发？", capsys)

    counted = int(conclusion.split(f"{FLAPPING} 触发 ")[1].split(" 次")[0])
    assert abs(counted - firing_episodes(stack, 60)) <= 1
    assert "反复触发" in conclusion


def test_any_targets_down_is_answered_from_the_targets_prometheus_scrapes(team_sources, stack, capsys):
    targets = stack.prometheus("/api/v1/targets", state="active")["activeTargets"]
    down = [t for t in targets if t["health"] != "up"]

    trace, [conclusion] = answer_of("Any scrape targets down?", capsys)

    assert f"{len(targets)} 个抓取目标中 {len(down)} 个不健康" in conclusion
    assert all(t["labels"]["job"] in conclusion for t in down)
    assert trace["session"]["output_type"] == "NORMAL"


def test_last_week_is_answered_with_the_window_that_exists(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("上周 billing 出过什么问题？", capsys)

    assert "过去 7 天（上周）" in conclusion
    # The stack keeps two days (`RETENTION`): the week is counted for the part Prometheus holds.
    assert "Prometheus 只保留最近 2 天 的指标，更早的看不到" in conclusion
    [history] = [i for i in trace["tool_invocations"] if "ALERTS_FOR_STATE" in i["input"].get("query", "")]
    assert "[10080m]" in history["input"]["query"]
    assert history["output"]["retention_minutes"] == 2 * 24 * 60


def test_restart_is_answered_as_read_only(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("帮我重启 billing", capsys)

    assert "不能执行「重启」" in conclusion
    assert trace["session"]["output_type"] == "NORMAL"
    assert not [i for i in trace["tool_invocations"] if i["tool_name"] == "query_logs"]
    # billing's alerts are read only to find their runbooks (its KubePodCrashLooping has one): no
    # finding about billing is presented as the action's result.
    assert "可参考处理手册《Pod is crash looping · Mitigation》" in conclusion
    executor = trace["self_evaluation"]["verifier_evaluation"]["executor_structured_output"]
    assert not [
        c for c in executor["claims"] if any(b["tool_name"] == "query_alerts" for b in c["evidence_bindings"])
    ]
    assert "当前存在" not in trace["session"]["answer"]


def test_which_first_names_the_critical_alert_first(team_sources, stack, capsys):
    groups = stack.prometheus("/api/v1/rules", type="alert")["groups"]
    critical = [
        r["name"]
        for g in groups
        for r in g["rules"]
        if r["labels"].get("severity") == "critical" and r.get("state") == "firing"
    ]

    _trace, [conclusion] = answer_of("哪个最需要先处理？", capsys)

    first = conclusion.split("最需要先处理：")[1].split("；")[0]
    assert any(name in first for name in critical)
    assert "critical" in first
