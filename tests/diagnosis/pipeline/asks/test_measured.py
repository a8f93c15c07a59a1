"""The `value` and `trend` asks of words the metric catalog answers: read into the query code built
(a rate, a p99, a ratio, an increase), queried and said with the number's unit and the subject's
plain name; words that name nothing in the catalog unfill the slot saying so, never another metric.
On the stack of real exporters, on the second world (node_exporter as `billing`) and on the demo
world, whose samples are never queried (it has no Prometheus): its asks are as they were."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.calls import slot_calls_run
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.asks.measured import MetricWords
from diagnosis.pipeline.asks.reader import asks_read
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.asks.slots import slots_read
from diagnosis.pipeline.asks.unread import unread_in
from diagnosis.pipeline.focus import Inventory, World
from diagnosis.pipeline.question import question_read
from diagnosis.pipeline.windows import window_in
from tests.diagnosis.pipeline.asks.support import (
    ALL_TOOLS,
    NO_PROMETHEUS,
    SERVICE_LABELS,
    FakeToolbox,
    alert_record,
    alerts_message,
    only,
    series_message,
)
from tests.diagnosis.pipeline.asks.support import DEMO as DEMO_NAMES
from tests.tools.exporters import (
    capture,
    exporter_catalog,
    second_world_answers,
    second_world_catalog,
    series_labels,
)
from tools.sources.demo import DemoWorldSource
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
T = NOW.timestamp()
SHIPPED = vocabulary_load(DEFAULT_VOCABULARY_FILE)
SECOND_WORLD = vocabulary_load(Path(__file__).parents[3] / "world" / "vocabulary.json")


def stack(name: str) -> tuple[World, MetricWords]:
    """A world and its metric words: the exporters' stack, the second world or the demo world."""
    if name == "demo":
        catalog, labels, vocabulary, queried = DemoWorldSource().metric_catalog(now=NOW), None, SHIPPED, False
        services, metrics = DEMO_NAMES.services, ()
    else:
        answers = capture() if name == "exporters" else second_world_answers()
        catalog = exporter_catalog() if name == "exporters" else second_world_catalog()
        labels, queried = series_labels(answers), True
        vocabulary = SHIPPED if name == "exporters" else SECOND_WORLD
        services, metrics = (
            catalog.values.get("job", ()) + catalog.values.get("service", ()),
            answers["names"],
        )
    world = World(
        vocabulary=vocabulary,
        inventory=Inventory.build(
            services=services, alerts=("KubePodCrashLooping",), metrics=metrics, vocabulary=vocabulary
        ),
        service_labels=SERVICE_LABELS,
        now=NOW,
        carrier=labels.carrier if labels else None,
        label_names=labels.label_names if labels else None,
        metric_catalog=catalog,
        series_queried=queried,
    )
    words = MetricWords(
        metric_catalog=catalog,
        vocabulary=vocabulary,
        carrier=world.carrier,
        label_names=world.label_names,
        known_names=frozenset(world.inventory.services | world.inventory.alerts),
        queried=queried,
    )
    return world, words


def asks(question: str, name: str = "exporters", *, with_words: bool = True) -> list[Ask]:
    world, words = stack(name)
    return asks_read(
        query=question,
        focus=world.focus_of(query=question),
        vocabulary=world.vocabulary,
        window=window_in(question, now=NOW, default_minutes=60),
        metric_words=words if with_words else None,
    )


def slot_world(name: str, tools=ALL_TOOLS) -> SlotWorld:
    world, _ = stack(name)
    return SlotWorld(
        vocabulary=world.vocabulary,
        service_labels=SERVICE_LABELS,
        tools=tools,
        now=NOW,
        logs_window_minutes=60,
        carrier=world.carrier,
    )


def test_a_rate_of_words_is_one_value_ask_on_the_query_code_built():
    [ask] = asks("nginx 每秒多少请求")

    assert (ask.kind, ask.subject_kind, ask.subject) == ("value", "series", "nginx_http_requests_total")
    assert ask.quantity.query == 'sum (rate(nginx_http_requests_total{job="nginx"}[5m]))'


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("Prometheus 的 5xx 错误率", "prometheus_http_requests_total"),
        ("redis 缓存命中率", "redis_keyspace_hits_total"),
        ("p99 of Prometheus's own query handler", "prometheus_http_request_duration_seconds"),
    ],
)
def test_a_computation_the_catalog_answers_is_a_value_asked_without_a_value_word(question, metric):
    [ask] = asks(question)

    assert ask.kind == "value"
    assert ask.quantity.metric == metric


def test_how_many_events_of_a_counter_in_a_window_is_its_increase_not_an_alerts_history():
    [ask] = asks("数据库死锁最近 30 分钟多少次")

    assert ask.kind == "value"
    assert ask.quantity.query == "sum (increase(pg_stat_database_deadlocks[30m]))"


@pytest.mark.parametrize(
    "question",
    [
        "过去 30 分钟 nginx 每秒请求数的走势",
        "过去 30 分钟 nginx 请求速率的走势",
        "How did nginx's request rate change over the last 30 minutes?",
    ],
)
def test_a_trend_of_a_rate_is_a_range_of_one_minute_rates_over_the_window(question):
    [ask] = asks(question)

    assert ask.kind == "trend"
    assert ask.window.minutes == 30
    assert ask.quantity.query == 'sum (rate(nginx_http_requests_total{job="nginx"}[1m]))'


def test_a_named_alert_is_asked_about_its_own_series_not_the_catalogs():
    [ask] = asks("KubePodCrashLooping 的当前值是多少")

    assert ask.quantity is None
    assert ask.subject_kind == "alert"


def test_a_gauge_the_question_writes_is_queried_by_that_name_as_before():
    [ask] = asks("node_memory_MemAvailable_bytes 当前值", "second")

    assert ask.quantity is None
    assert ask.subject == "node_memory_MemAvailable_bytes"


def test_a_counter_the_question_writes_is_its_rate():
    [ask] = asks("prometheus_http_requests_total 当前是多少")

    assert ask.quantity.query == "sum (rate(prometheus_http_requests_total[5m]))"


def test_words_that_name_nothing_are_carried_on_the_ask_and_query_nothing():
    [ask] = asks("redis 每秒驱逐多少", "second")
    toolbox = FakeToolbox(DEMO_NAMES)

    slot_calls_run([ask], toolbox=toolbox, world=slot_world("second"), prior=[])

    assert ask.quantity is None
    assert "驱逐" in ask.unnamed
    assert not [call for call in toolbox.calls if call[0] == "query_promql"]


def value_slot(ask: Ask, records: list[dict], *, world: str = "exporters"):
    series = series_message(2, ask.quantity.query, records)
    return only(slots_read([ask], results=[series], world=slot_world(world)))


def test_a_rate_is_said_per_second_on_the_subjects_plain_name():
    [ask] = asks("nginx 每秒多少请求")

    slot = value_slot(ask, [{"metric": {}, "value": [T - 5, "3.25"]}])

    assert slot.filled
    assert slot.conclusion.startswith("nginx 的 请求每秒速率：3.25 次/秒（按最近 5 分钟计算，采样时间 ")
    assert 'job="nginx"' not in slot.conclusion


def test_a_quantile_by_handler_names_each_handler_with_the_highest_first_in_milliseconds():
    [ask] = asks("prometheus_http_request_duration_seconds p99 by handler")
    records = [
        {"metric": {"handler": "/metrics"}, "value": [T, "0.004"]},
        {"metric": {"handler": "/api/v1/query"}, "value": [T, "0.099"]},
    ]

    slot = value_slot(ask, records)

    assert slot.conclusion.startswith(
        "prometheus_http_request_duration_seconds（/api/v1/query） 的 p99 duration：0.099 秒（99.00 毫秒）；"
        "prometheus_http_request_duration_seconds（/metrics） 的 p99 duration：0.004 秒（4.00 毫秒）"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.series[0]", "$.series[1]"]


def test_a_ratio_is_said_as_the_percent_prometheus_returned():
    [ask] = asks("shop 数据库的回滚率")

    slot = value_slot(ask, [{"metric": {}, "value": [T, "2.5"]}])

    assert slot.conclusion.startswith("shop 的 回滚占比：2.5%")


def test_cpu_per_host_is_named_by_its_host_and_the_second_worlds_service():
    [ask] = asks("billing 的 CPU 使用率", "second")

    slot = value_slot(ask, [{"metric": {"instance": "127.0.0.1:9100"}, "value": [T, "12.5"]}], world="second")

    assert slot.conclusion.startswith("billing 的 CPU 使用率：12.5%")


def test_a_measure_that_returned_nothing_is_unfilled_naming_its_query():
    [ask] = asks("shop 数据库的回滚率")

    slot = value_slot(ask, [{"metric": {}, "value": [T, "NaN"]}])

    assert not slot.filled
    assert ask.quantity.query in slot.why


def test_words_that_name_nothing_unfill_the_slot_saying_so_where_prometheus_answers():
    [ask] = asks("redis 每秒驱逐多少", "second")

    slot = only(slots_read([ask], results=[], world=slot_world("second")))

    assert not slot.filled
    assert slot.why == "指标目录中没有与「驱逐、redis」对应的指标"


def test_a_trend_of_a_measure_says_its_bounds_with_the_unit():
    [ask] = asks("过去 30 分钟 nginx 每秒请求数的走势")
    values = [[T - 1200, "1.5"], [T - 600, "4"], [T, "2.25"]]
    series = series_message(2, ask.quantity.query, [{"metric": {}, "values": values}], minutes=30)

    slot = only(slots_read([ask], results=[series], world=slot_world("exporters")))

    assert slot.filled
    assert slot.conclusion.startswith(
        "nginx 的 请求数每秒速率 过去 30 分钟：起 1.5 次/秒，末 2.25 次/秒，最小 1.5 次/秒，最大 4 次/秒（3 个采样）"
    )


@pytest.mark.parametrize(
    "question",
    [
        "order-service 内存使用率是多少",
        "payment-service 的 CPU 现在多少",
        "过去 1 小时 user-service 响应时间趋势",
        "为什么 payment-service CPU 使用率这么高",
        "payment-service 的 redis 驱逐每秒多少",
    ],
)
def test_on_the_demo_world_the_asks_are_as_they_were_without_the_catalog(question):
    with_words = asks(question, "demo")
    without = asks(question, "demo", with_words=False)

    assert [a.model_copy(update={"unnamed": ""}) for a in with_words] == without
    assert not any(a.quantity for a in with_words)


def test_on_the_demo_world_words_that_name_nothing_are_said_where_the_slot_is_unfilled():
    question = "payment-service 的 redis 驱逐每秒多少"
    [ask] = asks(question, "demo")
    alerts = alerts_message(
        1, [alert_record(DEMO_NAMES, other=True)], arguments={"service": "payment-service"}
    )

    slot = only(slots_read([ask], results=[alerts], world=slot_world("demo", tools=NO_PROMETHEUS)))

    assert not slot.filled
    assert slot.why.endswith("；指标目录中没有与「驱逐」对应的指标")


# --- Against a limit, beside another mode, which are down, the access lines' share ---------------------


def test_connections_against_a_setting_the_question_writes_say_the_share_the_used_and_the_limit():
    [ask] = asks("PostgreSQL 现在用了多少连接，max_connections 是多少？")
    used, limit = ask.quantity.beside
    key = {"instance": "127.0.0.1:36001", "job": "postgres", "server": "127.0.0.1:5432"}
    results = [
        series_message(2, ask.quantity.query, [{"metric": key, "value": [T, "60"]}]),
        series_message(3, used.query, [{"metric": key, "value": [T, "12"]}]),
        series_message(4, limit.query, [{"metric": key, "value": [T, "20"]}]),
    ]

    slot = only(slots_read([ask], results=results, world=slot_world("exporters")))

    assert (ask.kind, ask.quantity.computation) == ("value", "usage")
    assert slot.conclusion.startswith("postgres 的 连接使用率：60%，连接已用：12，连接上限：20")
    assert [b.raw_path for b in slot.bindings] == ["$.series[0]"] * 3


@pytest.mark.parametrize(
    ("question", "world"),
    [("CPU 使用率和 iowait 是多少？", "exporters"), ("billing 的 CPU 使用率和 iowait", "second")],
)
def test_cpu_usage_and_a_mode_asked_together_are_both_on_the_hosts_line(question, world):
    [ask] = asks(question, world)
    [iowait] = ask.quantity.beside
    host = {"job": "node", "instance": "127.0.0.1:9100"}
    results = [
        series_message(2, ask.quantity.query, [{"metric": host, "value": [T, "99.96"]}]),
        series_message(3, iowait.query, [{"metric": host, "value": [T, "0.02"]}]),
    ]

    slot = only(slots_read([ask], results=results, world=slot_world(world)))

    name = "billing" if world == "second" else "node"
    assert slot.conclusion.startswith(f"{name} 的 CPU 使用率：99.96%，iowait 占比：0.02%")
    assert "127.0.0.1" not in slot.conclusion


@pytest.mark.parametrize(
    ("question", "world", "metric"),
    [
        ("哪个拨测挂了，从什么时候开始的？", "exporters", "probe_success"),
        ("Which blackbox probe is failing and since when?", "exporters", "probe_success"),
        ("billing 的哪个 node 挂了，从什么时候开始的？", "second", "up"),
    ],
)
def test_which_up_gauge_is_down_is_answered_with_since_when_and_leaves_no_question_word_unread(
    question, world, metric
):
    [ask] = asks(question, world)
    down, up = (
        {"job": "blackbox", "instance": "http://shop/api/pay"},
        {"job": "blackbox", "instance": "http://shop/"},
    )
    calls = [arguments for _, arguments in KINDS["value"].calls(ask, alerts=[], world=slot_world(world))]
    history = [[T - 180, "1"], [T - 120, "0"], [T - 60, "0"], [T, "0"]]
    results = [
        series_message(
            2, ask.quantity.query, [{"metric": down, "value": [T, "0"]}, {"metric": up, "value": [T, "1"]}]
        ),
        series_message(
            3,
            ask.quantity.query,
            [{"metric": down, "values": history}, {"metric": up, "values": [[T, "1"]]}],
            minutes=60,
        ),
    ]

    slot = only(slots_read([ask], results=results, world=slot_world(world)))

    assert (ask.quantity.metric, ask.quantity.computation) == (metric, "down")
    assert calls == [
        {"query": ask.quantity.query, "minutes": 0},
        {"query": ask.quantity.query, "minutes": 60},
    ]
    since = datetime.fromtimestamp(T - 120).strftime("%H:%M:%S")
    assert (
        f"（http://shop/api/pay） 的 {metric} 为 0（失败），自 {since} 起；其余 1 个不为 0" in slot.conclusion
    )
    assert unread_in(question, asks=[ask], vocabulary=stack(world)[0].vocabulary) == []


def test_a_status_share_no_metric_carries_is_counted_in_the_access_lines():
    [ask] = asks("nginx 5xx 占比多少？")
    [english] = asks("What share of nginx requests are 5xx?")

    assert (ask.kind, ask.measure, ask.share, ask.service) == ("logs", "status", "5xx", "nginx")
    assert (english.kind, english.measure, english.share) == ("logs", "status", "5xx")
    assert asks("Prometheus 的 5xx 错误率")[0].quantity is not None


def test_a_label_value_of_the_catalog_is_a_known_subject_not_an_unknown_service():
    world, _ = stack("exporters")

    assert world.focus_of(query="shop 数据库的回滚率是多少？").unknown == ()
    assert [u.name for u in world.focus_of(query="shipping 数据库的回滚率是多少？").unknown] == ["shipping"]


def test_a_word_the_catalogs_metrics_use_is_no_unknown_name_where_a_quantity_answers():
    world, _ = stack("exporters")
    measured = question_read(query="Redis 内存用了 maxmemory 的多少？", world=world)
    unmeasured = question_read(query="maxmemory 的日志", world=world)

    assert measured.focus.unknown == ()
    assert [u.name for u in unmeasured.focus.unknown] == ["maxmemory"]
