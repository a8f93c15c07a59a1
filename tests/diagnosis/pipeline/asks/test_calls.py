"""The runner of the asks' calls: code makes them before the executor, in two turns (the alerts
first, since their `expr` names the series), each call once, reusing what an earlier round already
called; `CallsReused` answers the executor's repeat of a call with the recorded message.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

import json

from diagnosis.pipeline.asks.calls import CallsReused, plan_tools
from tests.diagnosis.pipeline.asks.support import (
    WORLDS,
    FakeToolbox,
    alert_record,
    alerts_message,
    asks_of,
    per_world,
    run,
    value_question,
)


@per_world
def test_value_and_threshold_on_one_service_query_its_alerts_once(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 的{names.service_metric}是多少，阈值是多少？", names, toolbox)

    alert_calls = [call for call in toolbox.calls if call[0] == "query_alerts"]
    assert alert_calls == [("query_alerts", {"service": names.service})]
    keys = [json.dumps(call, sort_keys=True, ensure_ascii=False) for call in toolbox.calls]
    assert len(keys) == len(set(keys))


def test_an_actions_calls_are_not_the_executors_plan():
    names = WORLDS[0]
    asks = asks_of(f"帮我重启 {names.other}", names)
    messages = [alerts_message(1, [alert_record(names, other=True)], arguments={"service": names.other})]

    assert plan_tools(asks, messages) == []
    assert plan_tools(asks_of(f"{names.alert} 怎么处理", names), messages) == ["query_alerts"]


@per_world
def test_a_call_an_earlier_round_made_is_reused_not_repeated(names):
    earlier = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)

    messages = run(value_question(names), names, toolbox, prior=[earlier])

    assert toolbox.turns == [[("query_promql", {"query": names.alert_series, "minutes": 0})]]
    assert messages[0] is earlier
    assert [m.tool_name for m in messages] == ["query_alerts", "query_promql"]


@per_world
def test_the_calls_stop_at_the_rounds_remaining_budget(names):
    toolbox = FakeToolbox(names, remaining_calls=1)

    messages = run(value_question(names), names, toolbox)

    assert toolbox.calls == [("query_alerts", {"service": names.service})]
    assert [m.tool_name for m in messages] == ["query_alerts"]


@per_world
def test_a_question_with_no_asks_calls_nothing(names):
    toolbox = FakeToolbox(names)

    assert run("你好", names, toolbox) == []
    assert toolbox.turns == []


@per_world
def test_calls_reused_answers_an_identical_call_with_the_earlier_message(names):
    made = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)
    reused = CallsReused(toolbox, [made])

    assert reused.call("query_alerts", {"service": names.service}) is made
    assert toolbox.turns == []


@per_world
def test_calls_reused_forwards_a_new_call_and_keeps_the_order_of_a_mixed_turn(names):
    made = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)
    reused = CallsReused(toolbox, [made])

    messages = reused.call_many(
        [
            ("query_logs", {"query": "error", "service": names.service}),
            ("query_alerts", {"service": names.service}),
        ]
    )

    assert toolbox.turns == [[("query_logs", {"query": "error", "service": names.service})]]
    assert messages[0].tool_name == "query_logs"
    assert messages[1] is made


@per_world
def test_calls_reused_matches_arguments_whatever_their_order(names):
    arguments = {"alert_name": names.alert, "service": names.service}
    made = alerts_message(7, [alert_record(names)], arguments=arguments)
    reused = CallsReused(FakeToolbox(names), [made])

    assert reused.call("query_alerts", {"service": names.service, "alert_name": names.alert}) is made


@per_world
def test_calls_reused_answers_a_call_by_the_alerts_tools_former_name_with_the_earlier_message(names):
    made = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)
    reused = CallsReused(toolbox, [made])

    assert reused.call("query_metrics", {"service": names.service}) is made
    assert toolbox.turns == []


@per_world
def test_calls_reused_forwards_the_toolboxs_budget_and_definitions(names):
    toolbox = FakeToolbox(names, remaining_calls=3)
    reused = CallsReused(toolbox, [])

    assert (reused.remaining_calls, reused.parallel_safe) == (3, False)
    assert reused.tool_definitions() == [{"name": "query_alerts"}]


@per_world
def test_a_kind_no_source_serves_is_not_called(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 最近的错误日志", names, toolbox, tools=frozenset({"query_alerts", "query_promql"}))

    assert [tool for tool, _ in toolbox.calls if tool == "query_logs"] == []
