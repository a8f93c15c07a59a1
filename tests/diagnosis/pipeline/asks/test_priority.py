"""`priority`: the firing alert to handle first, by severity and then how far past its threshold.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    alert_record,
    alerts_message,
    firing_world,
    only,
    per_world,
    read,
)


@per_world
def test_priority_puts_critical_before_warning_then_the_furthest_past_its_threshold(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("哪个服务最需要先处理？", names, [alerts]))

    assert slot.filled
    assert slot.conclusion.startswith(
        f"最需要先处理：{names.service} 的 {names.alert}Severe 告警（firing，critical）"
    )
    text = slot.conclusion
    assert (
        text.index(f"{names.alert}Severe") < text.index(f"{names.alert} 告警") < text.index(names.other_alert)
    )
    assert "Pending" not in text


@per_world
def test_an_english_priority_question_orders_the_same_way(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("which alert should I handle first?", names, [alerts]))

    assert f"最需要先处理：{names.service} 的 {names.alert}Severe" in slot.conclusion


@per_world
def test_a_dead_mans_switch_is_never_handled_first_whatever_its_severity(names):
    switch = alert_record(
        names,
        alert_name="PrometheusAlertmanagerE2eDeadManSwitch",
        service="monitoring",
        severity="critical",
        value="1",
        expr="vector(1)",
    )
    alerts = alerts_message(1, [switch, *firing_world(names)])

    slot = only(read("哪个服务最需要先处理？", names, [alerts]))

    assert slot.conclusion.startswith(f"最需要先处理：{names.service} 的 {names.alert}Severe 告警")
    assert slot.conclusion.endswith(
        "monitoring 的 PrometheusAlertmanagerE2eDeadManSwitch 告警（始终触发的看门狗告警，不计入先后）"
    )
