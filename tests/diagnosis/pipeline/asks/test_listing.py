"""`list`: every firing alert, numbered in priority order.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    alerts_message,
    firing_world,
    only,
    per_world,
    read,
)


@per_world
def test_the_list_numbers_every_firing_alert_in_priority_order(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("现在有哪些告警", names, [alerts]))

    assert slot.conclusion.startswith("当前 3 个 firing 告警（按优先级）：1. ")
    assert f"1. {names.service} 的 {names.alert}Severe" in slot.conclusion
    assert f"3. {names.other} 的 {names.other_alert}" in slot.conclusion
    assert len(slot.bindings) == 3
