"""What a question asks: code reads it into asks, each of one kind about one subject,
from the vocabulary's ask words and the names the world knows. Every behaviour holds on two worlds:
plain names (checkout, cart-api, billing-db) and the demo world's (order-service, payment-service)."""

from __future__ import annotations

import pytest

from diagnosis.pipeline.asks.registry import ask_label
from tests.diagnosis.pipeline.asks.support import DEMO, PLAIN, WORLD_IDS, WORLDS, Names, asks_of

per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
WEEK_MINUTES = 7 * 24 * 60


def read(query: str, names: Names) -> list[tuple[str, str]]:
    return [(ask.kind, ask.subject) for ask in asks_of(query, names)]


def read_with_topic(query: str, names: Names) -> list[tuple[str, str, str]]:
    return [(ask.kind, ask.subject, ask.topic) for ask in asks_of(query, names)]


@per_world
def test_a_current_number_of_a_service_is_a_value_ask_on_that_service(names):
    asks = asks_of(f"{names.service} 服务的{names.service_metric}现在是多少？", names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("value", names.service, "service")]
    assert ask_label(asks[0]) == f"{names.service} 的当前值"


@per_world
def test_a_number_and_its_threshold_are_two_asks_value_then_threshold(names):
    asks = read(f"{names.third} 的 {names.third_metric}是多少，阈值是多少？", names)

    assert asks == [("value", names.third), ("threshold", names.third)]


@per_world
def test_an_english_what_is_question_is_a_value_ask(names):
    assert read(f"what is the error rate of {names.service}?", names) == [("value", names.service)]


@per_world
@pytest.mark.parametrize("query", ["{service} 的内存情况怎么样", "how is the memory of {service}?"])
def test_how_a_topic_of_a_service_is_doing_is_a_value_ask_on_that_service(names, query):
    asks = read_with_topic(query.format(service=names.service), names)

    assert asks == [("value", names.service, "memory")]


@per_world
def test_how_a_topics_lines_are_doing_asks_for_the_lines_not_a_value(names):
    assert read(f"{names.service} 最近的错误日志怎么样", names) == [("logs", names.service)]


@per_world
def test_an_alert_firing_again_and_again_is_a_history_ask(names):
    asks = asks_of(f"{names.other} 的{names.other_metric}告警是不是在反复触发？", names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("history", names.other, "service")]
    assert ask_label(asks[0]) == f"{names.other} 的触发历史"


@per_world
def test_how_many_times_an_alert_fired_is_a_history_ask_on_the_alert(names):
    asks = asks_of(f"{names.alert} 最近 3 天触发了几次", names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("history", names.alert, "alert")]
    assert asks[0].window.minutes == 3 * 24 * 60


@per_world
def test_last_week_asks_the_history_of_a_seven_day_window_ending_now(names):
    asks = asks_of(f"上周 {names.service} 出过什么问题？", names)

    assert [(a.kind, a.subject) for a in asks] == [("history", names.service)]
    window = asks[0].window
    assert (window.minutes, window.end_minutes_ago, window.asked) == (WEEK_MINUTES, 0, True)


@per_world
def test_yesterday_is_a_history_window_that_ended_before_now(names):
    asks = asks_of(f"{names.other} 昨天出过什么问题", names)

    assert [a.kind for a in asks] == ["history"]
    assert asks[0].window.minutes == 24 * 60
    assert asks[0].window.end_minutes_ago > 0


@per_world
@pytest.mark.parametrize(
    "query", ["哪个服务最需要先处理？", "which alert should I handle first?", "先处理哪个告警"]
)
def test_what_to_handle_first_is_one_priority_ask_over_every_alert(names, query):
    asks = asks_of(query, names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("priority", "", "all")]
    assert ask_label(asks[0]) == "处理优先级"


@per_world
@pytest.mark.parametrize("query", ["Any scrape targets down?", "Prometheus 的抓取目标挂了吗"])
def test_scrape_targets_are_a_health_ask(names, query):
    assert read(query, names) == [("health", "")]


@per_world
@pytest.mark.parametrize("query", ["现在有哪些告警", "which alerts are firing?"])
def test_which_alerts_are_firing_is_a_list_ask(names, query):
    asks = asks_of(query, names)

    assert [(a.kind, a.subject_kind) for a in asks] == [("list", "all")]
    assert ask_label(asks[0]) == "告警列表"


@per_world
def test_whether_a_named_alert_is_firing_is_an_existence_ask_on_the_alert(names):
    for query in (f"是否存在 {names.alert} 告警", f"is {names.alert} firing?"):
        asks = asks_of(query, names)
        assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("existence", names.alert, "alert")]


@per_world
def test_a_request_to_restart_is_one_action_ask_with_its_word(names):
    asks = asks_of(f"帮我重启 {names.other}", names)

    assert len(asks) == 1
    assert (asks[0].kind, asks[0].word, asks[0].subject) == ("action", "重启", names.other)
    assert ask_label(asks[0]) == f"{names.other} 的操作请求"


@per_world
def test_an_action_on_a_service_no_source_knows_is_about_that_service(names):
    # Not about nothing in particular: no other service's runbook may be offered as its.
    asks = asks_of("帮我重启 ghost-api", names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("action", "ghost-api", "service")]


@per_world
def test_an_english_restart_request_is_one_action_ask(names):
    asks = asks_of(f"please restart {names.service}", names)

    assert [(a.kind, a.word) for a in asks] == [("action", "restart")]


@per_world
@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("把 max_connections 调到 200", "调到"),
        ("帮我把 {third} 扩容到 6 个实例", "扩容"),
        ("{third} 缩容到 2 个", "缩容"),
        ("scale {third} to 6 replicas", "scale"),
        ("resize the disk of {third}", "resize"),
        ("roll back {third}", "roll back"),
        ("{third} 的告警阈值改成 90%", "改成"),
        ("{third} 重启一下", "重启"),
    ],
)
def test_a_request_to_change_or_act_is_an_action_ask(names, query, word):
    asks = asks_of(query.format(third=names.third), names)

    assert [(a.kind, a.word) for a in asks] == [("action", word)]


@per_world
@pytest.mark.parametrize(
    "query",
    [
        "Why is the rollback alert firing?",
        "{third} 的回滚率是多少",
        "{third} 重启次数是多少",
        "{third} 为什么一直重启",
        "{third} 最近重启了吗",
        "did {third} restart?",
        "{third} 反复重启怎么处理",
        "pg_stat_database_xact_rollback 当前是多少",
        "{third} 的 max_connections 设置为多少",
        "How do I restart {third}?",
    ],
)
def test_an_action_word_naming_a_metric_an_alert_or_asked_about_is_no_action(names, query):
    asks = asks_of(query.format(third=names.third), names)

    assert "action" not in [a.kind for a in asks]


@per_world
def test_a_metric_the_question_writes_is_a_value_ask_on_that_series(names):
    asks = asks_of("node_load1 当前是多少", names)

    assert [(a.kind, a.subject, a.subject_kind) for a in asks] == [("value", "node_load1", "series")]


@per_world
def test_a_metric_asked_on_a_service_keeps_the_service(names):
    asks = asks_of(f"{names.other} 的 node_load1 是多少", names)

    assert [(a.kind, a.subject, a.subject_kind, a.service) for a in asks] == [
        ("value", "node_load1", "series", names.other)
    ]
    assert ask_label(asks[0]) == f"{names.other} 的 node_load1 的当前值"


@per_world
def test_a_number_over_an_asked_window_is_a_trend_ask(names):
    asks = asks_of(f"{names.service} 过去 1 小时{names.service_metric}趋势", names)

    assert [(a.kind, a.subject) for a in asks] == [("trend", names.service)]
    assert asks[0].window.asked


@per_world
def test_what_the_logs_say_is_a_logs_ask_on_the_service(names):
    asks = asks_of(f"{names.service} 的日志里有什么报错", names)

    assert [(a.kind, a.subject, a.topic) for a in asks] == [("logs", names.service, "error")]


@per_world
def test_whether_a_topic_is_present_asks_for_its_lines_not_for_the_alert_list(names):
    asks = read_with_topic(f"确认 {names.service} 是否存在连接池耗尽", names)

    assert asks == [("logs", names.service, "connection_pool")]


@per_world
def test_whether_a_service_has_a_topics_alert_asks_for_its_alerts(names):
    assert read(f"{names.service} 是否存在连接池告警", names) == [("list", names.service)]


@per_world
def test_a_symptom_word_beside_another_ask_is_its_topic_not_a_question_of_why(names):
    asks = read(f"只确认 {names.service} 是否存在 {names.alert} 告警和慢请求日志", names)

    assert "cause" not in [kind for kind, _ in asks]
    assert ("logs", names.service) in asks


@per_world
def test_a_symptom_word_alone_asks_the_cause(names):
    assert read(f"{names.service} 很慢", names) == [("cause", names.service)]


@per_world
def test_how_to_handle_an_alert_is_a_runbook_ask_on_the_alert(names):
    assert read(f"{names.alert} 怎么处理", names) == [("runbook", names.alert)]


@per_world
@pytest.mark.parametrize("query", ["你好", "hello there", "thanks!", "{service} 怎么样"])
def test_a_question_that_asks_nothing_a_slot_can_hold_has_no_asks(names, query):
    assert asks_of(query.format(service=names.service), names) == []


@per_world
@pytest.mark.parametrize("query", ["为什么频繁 Full GC", "{service} 为什么频繁 Full GC"])
def test_frequent_full_gc_asks_why_not_the_alert_history(names, query):
    asks = asks_of(query.format(service=names.service), names)

    assert "history" not in [a.kind for a in asks]
    assert [a.kind for a in asks] == ["cause"]


@per_world
def test_past_cases_how_to_handle_asks_for_the_runbook_not_the_history(names):
    asks = asks_of("历史案例怎么处理", names)

    assert "history" not in [a.kind for a in asks]
    assert [a.kind for a in asks] == ["runbook"]


@per_world
def test_why_a_service_errors_asks_the_cause_and_its_logs(names):
    assert read(f"为什么 {names.service} 报错", names) == [("cause", names.service), ("logs", names.service)]


def test_the_two_worlds_differ_in_names_only():
    """The same question shape reads the same asks whatever the world's names look like."""
    plain = [(a.kind, a.subject_kind) for a in asks_of(f"帮我重启 {PLAIN.other}", PLAIN)]
    demo = [(a.kind, a.subject_kind) for a in asks_of(f"帮我重启 {DEMO.other}", DEMO)]

    assert plain == demo == [("action", "service")]


@per_world
@pytest.mark.parametrize(
    ("query", "values"),
    [
        ("node_filesystem_avail_bytes 在 / 当前是多少", ("/",)),
        ("node_network_receive_bytes_total eth0 和 10.0.0.7:9100 当前值", ("eth0", "10.0.0.7:9100")),
        ("node_load1 当前是多少", ()),
    ],
)
def test_label_values_written_beside_a_metric_are_kept_with_its_ask(names, query, values):
    [ask] = asks_of(query, names)

    assert (ask.subject_kind, ask.values) == ("series", values)


@per_world
def test_a_topic_ask_carries_no_label_values(names):
    asks = asks_of(f"{names.service} 的{names.service_metric}现在是多少？ /data", names)

    assert all(a.values == () for a in asks)


@per_world
def test_an_alert_asked_on_an_unknown_service_is_asked_on_that_service_not_on_any(names):
    asks = asks_of(f'只确认 service="{names.service} canary" 是否存在 {names.alert} 告警', names)

    assert [(ask.kind, ask.subject, ask.service) for ask in asks] == [
        ("existence", names.alert, f"{names.service} canary")
    ]


@per_world
@pytest.mark.parametrize(("query", "kind"), [("shipping 为什么响应慢？", "cause"), ("shipping 的错误日志有哪些", "logs")])
def test_an_unknown_service_is_the_subject_asked_about_never_all_of_them(names, query, kind):
    assert read(query, names) == [(kind, "shipping")]


@per_world
def test_a_question_beside_a_request_to_act_is_answered_too_and_the_requests_object_is_no_question(names):
    assert [a.kind for a in asks_of(f"{names.service} 为什么慢？帮我重启一下", names)] == ["cause", "action"]
    assert [a.kind for a in asks_of(f"把 {names.service} 的告警阈值改成 90%", names)] == ["action"]


@per_world
@pytest.mark.parametrize(
    "query", ["What is the first step of the {alert} runbook?", "{alert} 按手册第一步做什么？"]
)
def test_the_first_step_of_a_runbook_asks_the_runbook_not_a_priority_or_a_value(names, query):
    assert read(query.format(alert=names.alert), names) == [("runbook", names.alert)]
