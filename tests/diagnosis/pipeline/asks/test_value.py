"""`value`: the current sample of the asked series, read against its alert's threshold and in its
unit; without Prometheus, the alert record's own value. Its calls: the alerts first, then the series
of their `expr`, or the metric the question names, by that name.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from diagnosis.pipeline.asks.calls import slot_calls_run
from diagnosis.pipeline.asks.slots import (
    conclusion_lines,
    coverage_gaps,
    slot_gap,
)
from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    RATIO,
    FakeToolbox,
    T,
    alert_record,
    alerts_message,
    asks_of,
    failed,
    metric_of,
    only,
    per_world,
    read,
    run,
    series_message,
    slot_world,
    value_question,
)


@per_world
def test_a_value_is_the_instant_sample_of_the_alerts_series_with_its_name_and_threshold(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    sample = {"metric": metric_of(names.alert_series), "value": [T - 10, names.alert_value]}
    series = series_message(2, names.alert_series, [sample])

    slot = only(read(value_question(names), names, [alerts, series]))

    assert slot.filled
    percent = f"{Decimal(names.alert_value) * 100:.2f}%"
    assert slot.said().startswith(f"{names.alert_series} 当前值 {names.alert_value}（{percent}）（采样时间")
    assert f"{names.alert} 阈值 > {names.alert_threshold}" in slot.said()
    assert f"为阈值的 {RATIO[names.id]} 倍" in slot.said()
    assert slot.said().endswith("· 来源 Prometheus")
    assert [(b.tool_name, b.source_invocation_id, b.raw_path) for b in slot.bindings] == [
        ("query_promql", 2, "$.series[0]")
    ]


@per_world
def test_without_prometheus_a_value_is_the_alert_records_own_value(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})

    slot = only(read(value_question(names), names, [alerts], tools=NO_PROMETHEUS))

    assert slot.filled
    assert slot.said() == (f"{names.service} 的 {names.alert} 当前值 {names.alert_value} · 来源 Alertmanager")
    assert [(b.source_invocation_id, b.raw_path) for b in slot.bindings] == [(1, "$.alerts[0]")]


@per_world
def test_without_prometheus_a_topics_value_is_never_another_topics_alert_value(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})

    slot = only(read(f"{names.service} 的磁盘情况怎么样", names, [alerts], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot_gap(slot).startswith(f"未能回答：{names.service} 的当前值 — ")
    assert names.alert not in slot_gap(slot)


@per_world
def test_a_named_metric_is_answered_from_its_own_series(names):
    sample = {"metric": {"__name__": "node_load1", "instance": "10.0.0.7:9100"}, "value": [T, "1.5"]}

    slot = only(read("node_load1 当前是多少", names, [series_message(3, "node_load1", [sample])]))

    assert slot.filled
    assert slot.said().startswith('node_load1{instance="10.0.0.7:9100"} 当前值 1.5')


@per_world
def test_a_series_with_no_data_leaves_the_value_unfilled_saying_so(names):
    slot = only(read("node_load1 当前是多少", names, [series_message(3, "node_load1", [])]))

    assert not slot.filled
    assert slot.why == "查询 node_load1 没有数据"
    assert slot_gap(slot) == "未能回答：node_load1 的当前值 — 查询 node_load1 没有数据"


@per_world
def test_a_failed_alert_source_leaves_the_value_unfilled_naming_the_source(names):
    down = failed(1, "query_alerts", arguments={"service": names.service}, source="alertmanager")

    slot = only(read(value_question(names), names, [down], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot.why == "数据源 alertmanager 调用失败"
    assert coverage_gaps([slot]) == [f"未能回答：{names.service} 的当前值 — 数据源 alertmanager 调用失败"]
    assert conclusion_lines([slot]) == []


@per_world
def test_a_sample_of_another_series_is_not_read_against_the_alerts_threshold(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    sample = {"metric": {"__name__": "node_load1", "job": "node"}, "value": [T - 10, "1.5"]}
    series = series_message(2, "node_load1", [sample])

    slot = only(read(value_question(names), names, [alerts, series]))

    assert slot.filled and 'node_load1{job="node"} 当前值 1.5' in slot.said()
    assert "阈值" not in slot.said()


@per_world
@pytest.mark.parametrize(
    ("metric", "raw", "shown"),
    [
        (
            "node_memory_MemAvailable_bytes",
            "21992013824",
            "当前值 21992013824 字节（约 21.99 GB / 20.48 GiB）",
        ),
        ("checkout_cache_hit_ratio", "0.3279", "当前值 0.3279（32.79%）"),
        ("http_request_duration_seconds", "6.904", "当前值 6.904 秒"),
        ("orders_created_total", "1520", "当前值 1520（"),
    ],
)
def test_a_value_is_read_in_its_unit_with_the_raw_number_beside_it(names, metric, raw, shown):
    sample = {"metric": {"__name__": metric, "job": "node"}, "value": [T - 10, raw]}

    slot = only(read(f"{metric} 当前值", names, [series_message(2, metric, [sample])]))

    assert shown in slot.said()


@per_world
def test_a_value_asks_the_alerts_first_then_the_series_of_the_alerts_expr(names):
    toolbox = FakeToolbox(names)

    messages = run(value_question(names), names, toolbox)

    assert toolbox.turns == [
        [("query_alerts", {"service": names.service})],
        [("query_promql", {"query": names.alert_series, "minutes": 0})],
    ]
    assert [m.tool_name for m in messages] == ["query_alerts", "query_promql"]


@per_world
def test_a_named_metric_is_queried_by_its_name_without_asking_the_alerts(names):
    toolbox = FakeToolbox(names)

    run("node_load1 当前是多少", names, toolbox)

    assert toolbox.calls == [("query_promql", {"query": "node_load1", "minutes": 0})]


@per_world
def test_without_prometheus_no_promql_is_called(names):
    toolbox = FakeToolbox(names)

    run(value_question(names), names, toolbox, tools=NO_PROMETHEUS)

    assert toolbox.calls == [("query_alerts", {"service": names.service})]


@per_world
def test_a_named_metric_on_a_service_matches_the_label_that_carries_it_in_that_series(names):
    toolbox = FakeToolbox(names)
    carried = {("node_load1", names.service): "job"}
    world = replace(slot_world(), carrier=lambda metric, subject: carried.get((metric, subject)))

    slot_calls_run(
        asks_of(f"{names.service} 的 node_load1 是多少", names), toolbox=toolbox, world=world, prior=[]
    )

    promql = [arguments["query"] for tool, arguments in toolbox.calls if tool == "query_promql"]
    assert promql == [f'node_load1{{job="{names.service}"}}']


@per_world
def test_a_topic_query_whose_series_carry_no_label_of_the_service_is_not_made(names):
    toolbox = FakeToolbox(names)
    world = replace(slot_world(), carrier=lambda metric, subject: None)

    slot_calls_run(asks_of(f"{names.other} 的内存是多少", names), toolbox=toolbox, world=world, prior=[])

    assert [call for call in toolbox.calls if call[0] == "query_promql"] == []
