"""The calls the asks need: code makes them before the executor, in two turns (the
alerts first, since their `expr` names the series), each call once, reusing what an earlier round
already called; `CallsReused` answers the executor's repeat of a call with the recorded message.
Every behaviour holds on two worlds: plain names (checkout, billing-db) and the demo world's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import pytest

from diagnosis.pipeline.asks.calls import CallsReused, plan_tools, slot_calls_run
from tests.diagnosis.pipeline.slot_support import (
    NO_PROMETHEUS,
    WORLD_IDS,
    WORLDS,
    Names,
    alert_record,
    alerts_message,
    asks_of,
    message,
    slot_world,
)

per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)


@dataclass
class FakeToolbox:
    """Records every turn of calls; answers alert queries with the world's firing alerts."""

    names: Names
    # Annotations of the world's alerts (a `runbook_url`).
    annotations: dict = field(default_factory=dict)
    remaining_calls: int = 10
    parallel_safe: bool = False
    turns: list[list[tuple[str, dict]]] = field(default_factory=list)
    next_id: int = 100

    def call(self, tool_name: str, arguments: dict) -> dict:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls) -> list[dict]:
        self.turns.append([(tool, dict(arguments)) for tool, arguments in calls])
        self.remaining_calls -= len(calls)
        return [self._answer(tool, arguments) for tool, arguments in calls]

    def tool_definitions(self) -> list[dict]:
        return [{"name": "query_metrics"}]

    @property
    def calls(self) -> list[tuple[str, dict]]:
        return [call for turn in self.turns for call in turn]

    def _answer(self, tool: str, arguments: dict) -> dict:
        self.next_id += 1
        if tool == "query_metrics":
            records = [
                alert_record(self.names, annotations=self.annotations),
                alert_record(self.names, other=True, annotations=self.annotations),
            ]
            wanted = [r for r in records if all(r.get(k) == v for k, v in arguments.items())]
            return alerts_message(self.next_id, wanted, arguments=arguments)
        return message(self.next_id, tool, "series", [], [], arguments=arguments)


def value_question(names: Names) -> str:
    return f"{names.service} 服务的{names.service_metric}现在是多少？"


def run(query: str, names: Names, toolbox: FakeToolbox, *, prior=(), tools=None) -> list[dict]:
    world = slot_world(tools) if tools else slot_world()
    return slot_calls_run(asks_of(query, names), toolbox=toolbox, world=world, prior=list(prior))


@per_world
def test_a_value_asks_the_alerts_first_then_the_series_of_the_alerts_expr(names):
    toolbox = FakeToolbox(names)

    messages = run(value_question(names), names, toolbox)

    assert toolbox.turns == [
        [("query_metrics", {"service": names.service})],
        [("query_promql", {"query": names.alert_series, "minutes": 0})],
    ]
    assert [m["tool_name"] for m in messages] == ["query_metrics", "query_promql"]


@per_world
def test_a_trend_asks_the_alerts_series_over_the_window(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 过去 1 小时{names.service_metric}趋势", names, toolbox)

    assert toolbox.turns[1] == [("query_promql", {"query": names.alert_series, "minutes": 60})]


@per_world
def test_value_and_threshold_on_one_service_query_its_alerts_once(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 的{names.service_metric}是多少，阈值是多少？", names, toolbox)

    alert_calls = [call for call in toolbox.calls if call[0] == "query_metrics"]
    assert alert_calls == [("query_metrics", {"service": names.service})]
    keys = [json.dumps(call, sort_keys=True, ensure_ascii=False) for call in toolbox.calls]
    assert len(keys) == len(set(keys))


@per_world
def test_a_named_metric_is_queried_by_its_name_without_asking_the_alerts(names):
    toolbox = FakeToolbox(names)

    run("node_load1 当前是多少", names, toolbox)

    assert toolbox.calls == [("query_promql", {"query": "node_load1", "minutes": 0})]


@per_world
def test_history_of_a_service_queries_alerts_for_state_on_every_service_label(names):
    toolbox = FakeToolbox(names)

    run(f"{names.other} 的{names.other_metric}告警是不是在反复触发？", names, toolbox)

    history = [args for tool, args in toolbox.calls if tool == "query_promql"]
    # An instant query: the changes of each alert's activeAt over the window count its episodes.
    assert history == [
        {
            "query": " or ".join(
                f'changes(ALERTS_FOR_STATE{{{label}="{names.other}"}}[60m])'
                for label in ("service", "app", "job")
            ),
            "minutes": 0,
        }
    ]


@per_world
def test_a_week_of_history_is_asked_over_seven_days(names):
    toolbox = FakeToolbox(names)

    run(f"上周 {names.service} 出过什么问题？", names, toolbox)

    [history] = [args["query"] for tool, args in toolbox.calls if tool == "query_promql"]
    assert f"[{7 * 24 * 60}m]" in history


@per_world
def test_without_prometheus_no_promql_is_called(names):
    toolbox = FakeToolbox(names)

    run(value_question(names), names, toolbox, tools=NO_PROMETHEUS)

    assert toolbox.calls == [("query_metrics", {"service": names.service})]


@per_world
def test_health_asks_the_scrape_targets_only(names):
    toolbox = FakeToolbox(names)

    run("Any scrape targets down?", names, toolbox)

    assert toolbox.calls == [("query_targets", {})]


@per_world
def test_an_action_looks_up_the_runbooks_of_its_subjects_alerts(names):
    toolbox = FakeToolbox(names)

    run(f"帮我重启 {names.other}", names, toolbox)

    assert toolbox.turns == [
        [("query_metrics", {"service": names.other})],
        [("lookup_knowledge", {"query": f"{names.other} {names.other_alert} 重启 处置 排查", "top_k": 2})],
    ]


@per_world
def test_a_runbook_ask_about_an_alert_follows_its_runbook_url_to_the_file(names):
    url = f"https://git.example.org/ops/runbooks/blob/main/team/{names.alert.lower()}-steps.MD"
    toolbox = FakeToolbox(names, annotations={"runbook_url": url})

    run(f"{names.alert} 的 runbook 第一步要检查什么？", names, toolbox)

    (alerts,), ((tool, arguments),) = toolbox.turns
    assert alerts == ("query_metrics", {"alert_name": names.alert})
    # The alert, its runbook file's stem, the alert's topic word if any, the steps' intents.
    words = arguments["query"].split()
    assert (tool, words[:2], words[-2:]) == (
        "lookup_knowledge",
        [names.alert, f"{names.alert.lower()}-steps"],
        ["处置", "排查"],
    )


@per_world
def test_a_runbook_ask_about_nothing_named_makes_no_alert_call(names):
    toolbox = FakeToolbox(names)

    run("连接池耗尽怎么处理", names, toolbox)

    assert [tool for tool, _ in toolbox.calls] == ["lookup_knowledge"]


def test_an_actions_calls_are_not_the_executors_plan():
    names = WORLDS[0]
    asks = asks_of(f"帮我重启 {names.other}", names)
    messages = [alerts_message(1, [alert_record(names, other=True)], arguments={"service": names.other})]

    assert plan_tools(asks, messages) == []
    assert plan_tools(asks_of(f"{names.alert} 怎么处理", names), messages) == ["query_metrics"]


@per_world
def test_logs_are_searched_on_the_asked_service_for_the_topic(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 的日志里有什么报错", names, toolbox)

    assert toolbox.calls == [("query_logs", {"query": "error", "service": names.service})]


@per_world
def test_a_call_an_earlier_round_made_is_reused_not_repeated(names):
    earlier = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)

    messages = run(value_question(names), names, toolbox, prior=[earlier])

    assert toolbox.turns == [[("query_promql", {"query": names.alert_series, "minutes": 0})]]
    assert messages[0] is earlier
    assert [m["tool_name"] for m in messages] == ["query_metrics", "query_promql"]


@per_world
def test_the_calls_stop_at_the_rounds_remaining_budget(names):
    toolbox = FakeToolbox(names, remaining_calls=1)

    messages = run(value_question(names), names, toolbox)

    assert toolbox.calls == [("query_metrics", {"service": names.service})]
    assert [m["tool_name"] for m in messages] == ["query_metrics"]


@per_world
def test_a_question_with_no_asks_calls_nothing(names):
    toolbox = FakeToolbox(names)

    assert run("你好", names, toolbox) == []
    assert toolbox.turns == []


# --- CallsReused ------------------------------------------------------------------------------


@per_world
def test_calls_reused_answers_an_identical_call_with_the_earlier_message(names):
    made = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)
    reused = CallsReused(toolbox, [made])

    assert reused.call("query_metrics", {"service": names.service}) is made
    assert toolbox.turns == []


@per_world
def test_calls_reused_forwards_a_new_call_and_keeps_the_order_of_a_mixed_turn(names):
    made = alerts_message(7, [alert_record(names)], arguments={"service": names.service})
    toolbox = FakeToolbox(names)
    reused = CallsReused(toolbox, [made])

    messages = reused.call_many(
        [
            ("query_logs", {"query": "error", "service": names.service}),
            ("query_metrics", {"service": names.service}),
        ]
    )

    assert toolbox.turns == [[("query_logs", {"query": "error", "service": names.service})]]
    assert messages[0]["tool_name"] == "query_logs"
    assert messages[1] is made


@per_world
def test_calls_reused_matches_arguments_whatever_their_order(names):
    arguments = {"alert_name": names.alert, "service": names.service}
    made = alerts_message(7, [alert_record(names)], arguments=arguments)
    reused = CallsReused(FakeToolbox(names), [made])

    assert reused.call("query_metrics", {"service": names.service, "alert_name": names.alert}) is made


@per_world
def test_calls_reused_forwards_the_toolboxs_budget_and_definitions(names):
    toolbox = FakeToolbox(names, remaining_calls=3)
    reused = CallsReused(toolbox, [])

    assert (reused.remaining_calls, reused.parallel_safe) == (3, False)
    assert reused.tool_definitions() == [{"name": "query_metrics"}]


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
