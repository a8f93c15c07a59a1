"""`threshold`: the comparison of the alert rule's `expr`, and how far past it the value is.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    RATIO,
    alert_record,
    alerts_message,
    per_world,
    read,
)


@per_world
def test_a_threshold_is_read_from_the_alert_rules_expr_with_how_far_past_it_the_value_is(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert threshold.filled
    assert threshold.said() == (
        f"{names.alert} 的阈值：{names.alert_series} > {names.alert_threshold}（告警规则 expr）；"
        f"当前值 {names.alert_value}，为阈值的 {RATIO[names.id]} 倍 · 来源 Alertmanager"
    )


@per_world
def test_a_threshold_written_the_other_way_round_reads_the_same(names):
    record = alert_record(names, expr=f"{names.alert_threshold} < {names.alert_series}")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert f"{names.alert_series} > {names.alert_threshold}（告警规则 expr）" in threshold.conclusion


@per_world
def test_without_an_expr_the_threshold_is_the_records_own(names):
    record = alert_record(names, expr="", value="92%", threshold="80%")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert threshold.filled
    assert threshold.conclusion.startswith(f"{names.alert} 的阈值 80%，当前值 92%")


@per_world
def test_an_alert_with_no_rule_and_no_threshold_leaves_the_threshold_unfilled(names):
    record = alert_record(names, expr="")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert not threshold.filled
    assert threshold.why == "告警记录没有规则表达式或阈值"
