"""Words to series: a question's words, Chinese or English, reach the metrics of catalogs as real
stacks expose them (node, postgres, redis, nginx, blackbox exporters and Prometheus itself), the demo
world's samples and the second world's node_exporter; subjects are the catalog's label values; a word
that names nothing in the catalog is said to name nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.exporters import NOW, exporter_catalog, second_world_catalog
from tools.metric_catalog import MetricCatalog
from tools.metric_search import metric_terms, metrics_searched, subjects_named, words_read
from tools.sources.demo import DemoWorldSource
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

SHIPPED = vocabulary_load(DEFAULT_VOCABULARY_FILE)
SECOND_WORLD = vocabulary_load(Path(__file__).parents[1] / "world" / "vocabulary.json")


def first_hit(question: str, metric_catalog: MetricCatalog, vocabulary=SHIPPED) -> str:
    found = metrics_searched(question, metric_catalog=metric_catalog, vocabulary=vocabulary)
    assert found.hits, (question, found.reading)
    return found.hits[0].entry.name


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("nginx 每秒多少请求", "nginx_http_requests_total"),
        ("how many requests per second does nginx serve", "nginx_http_requests_total"),
        ("redis 每秒驱逐多少个 key", "redis_evicted_keys_total"),
        ("redis evictions per second", "redis_evicted_keys_total"),
        ("数据库最近有死锁吗", "pg_stat_database_deadlocks"),
        ("deadlocks in the database", "pg_stat_database_deadlocks"),
        ("shop 库的回滚率", "pg_stat_database_xact_rollback"),
        ("哪个拨测挂了", "probe_success"),
        ("which probe is down", "probe_success"),
        ("数据库连接数", "pg_stat_database_numbackends"),
        ("how much memory does redis use", "redis_memory_used_bytes"),
        ("垃圾回收停顿的中位数", "go_gc_duration_seconds"),
        (
            "prometheus_http_request_duration_seconds p99 by handler",
            "prometheus_http_request_duration_seconds",
        ),
    ],
)
def test_words_in_either_language_reach_the_exporters_metric(question, metric):
    assert first_hit(question, exporter_catalog()) == metric


def test_the_words_reach_the_second_worlds_node_exporter_metrics():
    catalog = second_world_catalog()

    assert first_hit("node 主机当前 1 分钟负载", catalog, SECOND_WORLD) == "node_load1"
    assert first_hit("billing 内存还剩多少", catalog, SECOND_WORLD).startswith("node_memory_")
    assert first_hit("billing 磁盘使用率", catalog, SECOND_WORLD).startswith("node_filesystem_")


def test_the_words_reach_the_demo_worlds_own_samples():
    catalog = DemoWorldSource().metric_catalog(now=NOW)

    assert first_hit("payment-service CPU 使用率", catalog) == "cpu_usage_percent"
    assert first_hit("user-service 缓存命中率", catalog) == "cache_hit"


def test_a_teams_vocabulary_words_reach_a_metric_whose_help_says_them():
    # 垃圾回收 is the shipped vocabulary's gc group: its English terms are in go_gc's HELP.
    found = metrics_searched("垃圾回收", metric_catalog=exporter_catalog(), vocabulary=SHIPPED)
    without = metrics_searched("垃圾回收", metric_catalog=exporter_catalog(), vocabulary=None)

    assert found.hits[0].entry.name == "go_gc_duration_seconds"
    assert not without.hits


def test_subjects_are_the_catalogs_label_values_named_as_whole_words():
    catalog = exporter_catalog()

    assert subjects_named("shop 数据库的回滚率", metric_catalog=catalog) == [("datname", "shop")]
    assert subjects_named("nginx 每秒请求", metric_catalog=catalog) == [("job", "nginx")]
    assert subjects_named("拨测 http://127.0.0.1:19300/ 挂了吗", metric_catalog=catalog) == [
        ("instance", "http://127.0.0.1:19300/")
    ]
    # Inside a metric's name, a longer path or a number: no subject.
    assert subjects_named("prometheus_http_requests_total", metric_catalog=catalog) == []
    assert subjects_named("/api/v1/query_range 的 p99", metric_catalog=catalog) == []
    assert subjects_named("第 0 和 1 个", metric_catalog=catalog) == []


def test_a_word_before_a_label_name_is_the_one_value_of_that_label_it_names():
    catalog = exporter_catalog()

    assert ("handler", "/api/v1/query") in subjects_named(
        "p99 of Prometheus's own query handler", metric_catalog=catalog
    )


def test_computation_words_are_read_in_either_language():
    catalog = exporter_catalog()

    p99 = words_read("p99 延迟", metric_catalog=catalog)
    median = words_read("响应时间中位数", metric_catalog=catalog)
    assert (p99.quantile, median.quantile) == (0.99, 0.5)
    assert words_read("每秒请求数", metric_catalog=catalog).rate
    assert words_read("requests per second", metric_catalog=catalog).rate
    assert words_read("死锁多少次", metric_catalog=catalog).increase
    assert words_read("回滚率", metric_catalog=catalog).ratio
    assert words_read("cache hit ratio", metric_catalog=catalog).ratio
    assert words_read("p99 by handler", metric_catalog=catalog).grouped == ("handler",)
    assert words_read("按 datname 的回滚率", metric_catalog=catalog).grouped == ("datname",)


def test_a_quantile_alone_asks_about_durations():
    reading = words_read("p99 of the query handler", metric_catalog=exporter_catalog())

    assert "latency" in reading.concept_names


def test_a_word_that_names_nothing_in_the_catalog_is_said_to_name_nothing():
    second = metrics_searched(
        "redis 每秒驱逐多少", metric_catalog=second_world_catalog(), vocabulary=SECOND_WORLD
    )
    exporters = metrics_searched("kafka 消息积压多少", metric_catalog=exporter_catalog(), vocabulary=SHIPPED)
    path = metrics_searched("/api/v2/orders 的 p99", metric_catalog=exporter_catalog(), vocabulary=SHIPPED)
    demo = metrics_searched(
        "驱逐", metric_catalog=DemoWorldSource().metric_catalog(now=NOW), vocabulary=SHIPPED
    )

    assert second.reading.unmatched == ("驱逐", "redis")
    assert not second.hits
    assert exporters.reading.unmatched == ("kafka",)
    assert path.reading.unmatched == ("/api/v2/orders",)
    assert demo.reading.unmatched == ("驱逐",)


def test_known_names_ask_words_and_the_catalogs_own_words_never_name_nothing():
    catalog = exporter_catalog()

    for question in (
        "what is the current value of up for the redis job",
        "how many deadlocks in the shop database over the last hour",
        "nginx 每秒多少请求",
    ):
        assert metrics_searched(question, metric_catalog=catalog, vocabulary=SHIPPED).reading.unmatched == ()
    named = metrics_searched(
        "checkout 的请求数", metric_catalog=catalog, vocabulary=SHIPPED, known_names=frozenset({"checkout"})
    )
    assert named.reading.unmatched == ()


def test_an_empty_catalog_says_nothing_is_unnamed():
    found = metrics_searched("redis 每秒驱逐多少", metric_catalog=MetricCatalog(), vocabulary=SHIPPED)

    assert not found.hits
    assert found.reading.unmatched == ()


def test_the_shipped_terms_are_bilingual_and_each_concept_marks_metrics_by_name_parts():
    terms = metric_terms()

    for name, concept in terms.concepts.items():
        assert concept.parts, name
        assert any(not word.isascii() for word in concept.words), name
        assert any(word.isascii() for word in concept.words), name
    for rule in terms.ratios:
        assert {rule.part, *rule.rest, *([rule.whole] if rule.whole else [])} <= set(terms.concepts)


def test_in_english_a_word_names_a_subject_only_where_a_subject_stands():
    exporters, second = exporter_catalog(), second_world_catalog()

    lag = metrics_searched("What is the consumer lag of kafka?", metric_catalog=exporters, vocabulary=SHIPPED)
    before = metrics_searched("mongodb connections right now", metric_catalog=exporters, vocabulary=SHIPPED)
    prose = metrics_searched(
        "What is the disk usage on billing, is it filling up quickly?", metric_catalog=second, vocabulary=SECOND_WORLD
    )

    assert lag.reading.unmatched == ("consumer", "kafka")
    assert before.reading.unmatched == ("mongodb",)
    assert prose.reading.unmatched == ()
