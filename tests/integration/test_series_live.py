"""Series as they exist on the live stack: a subject is matched on the label that
carries it in each series (`job="node"` has no `service` label), a metric the question names is
queried by that name, and no recorded query carries a matcher its series lack."""

import promql_parser
import pytest

from tests.integration.test_answers_live import answer_of
from tools.numbers import number_text, series_name
from tools.series import SeriesLabels
from tools.sources.prometheus import PrometheusSource

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def promql_calls(trace: dict) -> list[dict]:
    return [i for i in trace["tool_invocations"] if i["tool_name"] == "query_promql"]


def selectors_of(query: str) -> list[promql_parser.VectorSelector]:
    found: list = []
    promql_parser.walk(
        promql_parser.parse(query),
        lambda node: found.append(node) if isinstance(node, promql_parser.VectorSelector) else None,
    )
    return found


def assert_every_matcher_is_a_label_of_its_series(trace: dict, stack) -> None:
    for invocation in promql_calls(trace):
        for selector in selectors_of(invocation["input"]["query"]):
            labels = set(stack.prometheus("/api/v1/labels", **{"match[]": selector.name}))
            matchers = {m.name for m in selector.matchers.matchers} - {"__name__"}
            assert matchers <= labels, (invocation["input"]["query"], matchers - labels)


def live_value(stack, query: str, at: float) -> str:
    """What Prometheus itself holds for the query at the sample's own time."""
    [series] = stack.prometheus("/api/v1/query", query=query, time=at)["result"]
    return series["value"][1]


def test_a_host_question_reads_the_node_jobs_series_without_a_service_matcher(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("node 主机当前 1 分钟负载", capsys)

    load, *_ = [i for i in promql_calls(trace) if i["input"]["query"].startswith("node_load1")]
    assert load["input"]["query"] == 'node_load1{job="node"}'
    [sample] = load["output"]["series"]
    at, value = sample["value"]
    assert value == live_value(stack, 'node_load1{job="node"}', at)
    # The subject by its plain name, not the series' label dump.
    assert f"node 的 负载：{number_text(value)}" in conclusion
    assert_every_matcher_is_a_label_of_its_series(trace, stack)


def test_a_metric_the_question_names_is_queried_by_that_name(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("node_memory_MemAvailable_bytes 当前值", capsys)

    assert "未找到名为" not in trace["session"]["answer"]
    named, *_ = [i for i in promql_calls(trace) if i["input"]["query"] == "node_memory_MemAvailable_bytes"]
    for sample in named["output"]["series"]:
        at, value = sample["value"]
        assert value == live_value(stack, series_name(sample["metric"]), at)
        assert f"{series_name(sample['metric'])} 当前值 {number_text(value)}" in conclusion
    assert {s["metric"]["job"] for s in named["output"]["series"]} == {"node", "billing-node", "ledger-node"}
    assert_every_matcher_is_a_label_of_its_series(trace, stack)


def test_a_metric_no_vocabulary_knows_is_answered_with_its_live_value(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("node_filesystem_avail_bytes 在 / 当前是多少", capsys)

    assert "未找到名为 node_filesystem_avail_bytes" not in trace["session"]["answer"]
    # "/" is a value of the series' `mountpoint`: the question's own matcher, and no other.
    named, *_ = [
        i for i in promql_calls(trace) if i["input"]["query"] == 'node_filesystem_avail_bytes{mountpoint="/"}'
    ]
    assert {s["metric"]["mountpoint"] for s in named["output"]["series"]} == {"/"}
    [root] = [s for s in named["output"]["series"] if s["metric"]["job"] == "node"]
    at, value = root["value"]
    assert value == live_value(stack, 'node_filesystem_avail_bytes{job="node",mountpoint="/"}', at)
    assert f"{series_name(root['metric'])} 当前值 {number_text(value)}" in conclusion
    assert_every_matcher_is_a_label_of_its_series(trace, stack)


def test_threshold_and_trend_sessions_carry_no_matcher_their_series_lack(team_sources, stack, capsys):
    expr = stack.alert("KubePodCrashLooping")["expr"]
    number = expr.split(" >= ")[1]

    threshold, conclusions = answer_of("KubePodCrashLooping 的阈值是多少？", capsys)
    trend, _ = answer_of("过去 10 分钟 node 的负载趋势", capsys)

    assert any(f">= {number}（告警规则 expr）" in line for line in conclusions)
    ranged, *_ = [i for i in promql_calls(trend) if i["input"].get("minutes")]
    assert ranged["input"] == {"query": 'node_load1{job="node"}', "minutes": 10}
    assert ranged["output"]["result_type"] == "matrix"
    for trace in (threshold, trend):
        assert_every_matcher_is_a_label_of_its_series(trace, stack)


def test_the_label_carrying_a_subject_is_read_from_the_series_themselves(settings, stack):
    source = PrometheusSource(stack.prometheus_url)
    metrics = source.label_values("__name__")
    labels = SeriesLabels(source, service_labels=["service", "app", "job"], metrics=metrics)

    assert labels.carrier("node_load1", "billing") == "service"
    assert labels.carrier("node_load1", "node") == "job"
    assert labels.carrier("node_load1", "nothing-of-that-name") is None
    assert labels.carrier("jvm_gc_pause_seconds_sum", "billing") is None
    assert labels.carrier("node_filesystem_avail_bytes", "/") == "mountpoint"
