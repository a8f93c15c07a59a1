"""`action`: the read-only statement, pointing at the subject's runbook steps when there are some.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    FakeToolbox,
    alert_record,
    alerts_message,
    block,
    knowledge_message,
    only,
    per_world,
    read,
    run,
)


@per_world
def test_an_action_is_answered_with_the_read_only_statement(names):
    slot = only(read(f"帮我重启 {names.other}", names, []))

    assert slot.filled
    assert slot.line() == "结论：本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作"
    assert slot.bindings == []


@per_world
def test_an_action_with_a_runbook_of_its_subjects_alert_points_at_its_steps(names):
    alerts = alerts_message(1, [alert_record(names, other=True)], arguments={"service": names.other})
    runbook = block(
        f"runbooks/{names.other_alert}.md",
        f"{names.other_alert} 处理手册 · 处置措施",
        "1. 扩容",
        section="处置措施",
        named=(names.other_alert,),
    )

    slot = only(read(f"帮我重启 {names.other}", names, [alerts, knowledge_message(names, blocks=[runbook])]))

    assert slot.said() == (
        "本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作；"
        f"可参考处理手册《{names.other_alert} 处理手册 · 处置措施》：1. 扩容 · 来源 runbooks/{names.other_alert}.md"
    )


@per_world
def test_an_action_is_never_pointed_at_another_services_runbook(names):
    # The other service has no alert; the runbook found names the first service's alert.
    alerts = alerts_message(1, [], arguments={"service": names.other})

    slot = only(read(f"帮我重启 {names.other}", names, [alerts, knowledge_message(names)]))

    assert slot.filled
    assert slot.line() == "结论：本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作"
    assert slot.bindings == []


@per_world
def test_an_action_looks_up_the_runbooks_of_its_subjects_alerts(names):
    toolbox = FakeToolbox(names)

    run(f"帮我重启 {names.other}", names, toolbox)

    assert toolbox.turns == [
        [("query_alerts", {"service": names.other})],
        [("lookup_knowledge", {"query": f"{names.other} {names.other_alert} 重启 处置 排查", "top_k": 2})],
    ]
