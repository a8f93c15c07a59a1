"""Queries by type, built by code over catalogs as real stacks expose them: a counter as a rate or an
increase, never its total; a histogram's quantile; a summary's quantile label; ratios of sibling
counters and of a gauge to its limit; CPU time by mode. Each query is parsed by the PromQL parser, its
matchers are on the labels the series carry (asked of the captured source as a session asks), and its
number is said with its unit."""

from __future__ import annotations

from pathlib import Path

import promql_parser
import pytest

from tests.tools.exporters import (
    NOW,
    exporter_catalog,
    second_world_answers,
    second_world_catalog,
    series_labels,
)
from tools.evidence.series.record import SeriesRecord
from tools.metric_catalog import MetricCatalog
from tools.metric_query import Measure, MeasureGap, measure_built
from tools.metric_search import metrics_searched
from tools.sources.demo import DemoWorldSource
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

SHIPPED = vocabulary_load(DEFAULT_VOCABULARY_FILE)
SECOND_WORLD = vocabulary_load(Path(__file__).parents[1] / "world" / "vocabulary.json")


def measure(
    question: str, *, world: str = "exporters", window_minutes: int = 0, named: str = ""
) -> Measure | MeasureGap:
    catalog, labels, vocabulary = {
        "exporters": (exporter_catalog(), series_labels(), SHIPPED),
        "second": (second_world_catalog(), series_labels(second_world_answers()), SECOND_WORLD),
    }[world]
    found = metrics_searched(question, metric_catalog=catalog, vocabulary=vocabulary)
    return measure_built(
        found.reading,
        found.hits,
        metric_catalog=catalog,
        carrier=labels.carrier,
        label_names=labels.label_names,
        window_minutes=window_minutes,
        named=named,
    )


def built(question: str, **options) -> Measure:
    result = measure(question, **options)
    assert isinstance(result, Measure), result
    promql_parser.parse(result.query)  # raises on anything the parser cannot read
    return result


def test_a_counter_is_a_per_second_rate_never_its_raw_total():
    requests = built("nginx 每秒多少请求")

    assert requests.query == 'sum (rate(nginx_http_requests_total{job="nginx"}[5m]))'
    assert (requests.computation, requests.unit, requests.range_minutes) == ("rate", "/s", 5)
    assert requests.said("3.25") == "3.25 次/秒"
    assert built("redis 每秒驱逐多少个 key").query == 'sum (rate(redis_evicted_keys_total{job="redis"}[5m]))'
    named = built("prometheus_http_requests_total 当前值", named="prometheus_http_requests_total")
    assert named.query == "sum (rate(prometheus_http_requests_total[5m]))"


def test_a_count_over_the_asked_window_is_the_counters_increase_over_it():
    deadlocks = built("数据库死锁最近 30 分钟多少次", window_minutes=30)

    assert deadlocks.query == "sum (increase(pg_stat_database_deadlocks[30m]))"
    assert (deadlocks.computation, deadlocks.range_minutes) == ("increase", 30)


def test_a_histogram_is_a_quantile_of_its_buckets_rates_on_the_subject_and_by_the_label_asked():
    handler = built("p99 of Prometheus's own query handler")
    by_handler = built("prometheus_http_request_duration_seconds p99 by handler")
    median = built("Prometheus /api/v1/query 接口的中位数延迟")

    assert handler.query == (
        "histogram_quantile(0.99, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket"
        '{job="prometheus",handler="/api/v1/query"}[5m])))'
    )
    assert handler.label == "p99 延迟"
    assert by_handler.query == (
        "histogram_quantile(0.99, sum by (le, handler) "
        "(rate(prometheus_http_request_duration_seconds_bucket[5m])))"
    )
    assert by_handler.grouped == ("handler",)
    assert median.query.startswith("histogram_quantile(0.5, ")


def test_a_summary_is_read_by_its_quantile_label_and_a_quantile_it_lacks_is_not_another_metrics():
    assert built("go gc 停顿 p50").query == 'go_gc_duration_seconds{quantile="0.5"}'
    assert isinstance(measure("go gc 停顿 p95"), MeasureGap)


@pytest.mark.parametrize(
    ("question", "query"),
    [
        (
            "shop 数据库的回滚率",
            '100 * sum (rate(pg_stat_database_xact_rollback{datname="shop"}[5m])) / '
            '(sum (rate(pg_stat_database_xact_rollback{datname="shop"}[5m])) + '
            'sum (rate(pg_stat_database_xact_commit{datname="shop"}[5m])))',
        ),
        (
            "redis 缓存命中率",
            '100 * sum (rate(redis_keyspace_hits_total{job="redis"}[5m])) / '
            '(sum (rate(redis_keyspace_hits_total{job="redis"}[5m])) + '
            'sum (rate(redis_keyspace_misses_total{job="redis"}[5m])))',
        ),
        (
            "数据库缓存命中率",
            "100 * sum (rate(pg_stat_database_blks_hit[5m])) / "
            "(sum (rate(pg_stat_database_blks_hit[5m])) + sum (rate(pg_stat_database_blks_read[5m])))",
        ),
        (
            "Prometheus 的 5xx 错误率",
            '100 * sum (rate(prometheus_http_requests_total{job="prometheus",code=~"5.."}[5m])) / '
            'sum (rate(prometheus_http_requests_total{job="prometheus"}[5m]))',
        ),
    ],
)
def test_a_ratio_is_the_ratio_of_the_matching_counters_rates(question, query):
    ratio = built(question)

    assert ratio.query == query
    assert (ratio.computation, ratio.unit) == ("ratio", "percent")
    assert ratio.said("12.5") == "12.5%"


@pytest.mark.parametrize(
    ("question", "world", "query"),
    [
        (
            "redis 内存使用率",
            "exporters",
            '100 * redis_memory_used_bytes{job="redis"} / (redis_memory_max_bytes{job="redis"} > 0)',
        ),
        (
            "数据库连接数占上限的比例",
            "exporters",
            "100 * sum by (instance, job, server) (pg_stat_database_numbackends) / "
            "(sum by (instance, job, server) (pg_settings_max_connections) > 0)",
        ),
        (
            "磁盘使用率",
            "exporters",
            "100 * (1 - node_filesystem_avail_bytes / (node_filesystem_size_bytes > 0))",
        ),
        (
            "billing 内存使用率",
            "second",
            '100 * (1 - node_memory_MemAvailable_bytes{service="billing"} / '
            '(node_memory_MemTotal_bytes{service="billing"} > 0))',
        ),
    ],
)
def test_a_usage_is_a_gauge_against_its_sibling_limit_or_one_minus_what_is_free(question, world, query):
    usage = built(question, world=world)

    assert usage.query == query
    assert (usage.computation, usage.unit) == ("usage", "percent")


def test_cpu_is_the_share_of_time_out_of_idle_or_in_the_mode_asked_per_host():
    cpu = built("CPU 使用率是多少")
    iowait = built("iowait 多少")
    billing = built("billing 的 CPU 使用率", world="second")

    assert cpu.query == '100 * (1 - avg by (job, instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])))'
    assert iowait.query == '100 * avg by (job, instance) (rate(node_cpu_seconds_total{mode="iowait"}[5m]))'
    assert (cpu.label, iowait.label) == ("CPU 使用率", "iowait 占比")
    assert (cpu.beside, iowait.beside) == ((), ())
    assert billing.query == (
        '100 * (1 - avg by (job, instance) (rate(node_cpu_seconds_total{service="billing",mode="idle"}[5m])))'
    )


@pytest.mark.parametrize(
    ("question", "world"),
    [
        ("CPU 使用率和 iowait 是多少？", "exporters"),
        ("What are the CPU usage and iowait right now?", "exporters"),
        ("billing 的 CPU 使用率和 iowait", "second"),
    ],
)
def test_cpu_usage_asked_with_a_mode_is_the_usage_with_the_modes_share_beside_it(question, world):
    cpu = built(question, world=world)

    assert cpu.query.startswith("100 * (1 - avg by (job, instance) (rate(node_cpu_seconds_total{")
    assert 'mode="idle"' in cpu.query
    [iowait] = cpu.beside
    assert 'mode="iowait"' in iowait.query
    assert iowait.label == "iowait 占比"
    promql_parser.parse(iowait.query)


@pytest.mark.parametrize(
    ("question", "world", "used", "limit"),
    [
        (
            "Redis 内存用了 maxmemory 的多少？",
            "exporters",
            'redis_memory_used_bytes{job="redis"}',
            'redis_memory_max_bytes{job="redis"}',
        ),
        (
            "How close is Redis memory to its maxmemory?",
            "exporters",
            'redis_memory_used_bytes{job="redis"}',
            'redis_memory_max_bytes{job="redis"}',
        ),
        (
            "billing 内存用了上限的多少",
            "second",
            'node_memory_MemAvailable_bytes{service="billing"}',
            'node_memory_MemTotal_bytes{service="billing"}',
        ),
    ],
)
def test_a_gauge_against_its_limit_says_what_is_used_and_the_limit_beside_the_share(
    question, world, used, limit
):
    usage = built(question, world=world)

    assert usage.computation == "usage"
    assert [beside.query for beside in usage.beside] == [used, limit]
    assert usage.beside[0].said("1048576") == "1048576 字节（1.00 MiB）"


def test_a_setting_the_question_writes_is_the_limit_and_no_setting_is_what_is_used():
    usage = built(
        "How many PostgreSQL connections are in use against max_connections?",
        named="pg_settings_max_connections",
    )

    assert usage.query == (
        "100 * sum by (instance, job, server) (pg_stat_database_numbackends) / "
        "(sum by (instance, job, server) (pg_settings_max_connections) > 0)"
    )
    assert [beside.label for beside in usage.beside] == ["connections 已用", "connections 上限"]


def test_an_up_gauge_asked_with_its_down_words_is_read_as_which_are_down():
    probe = built("Which blackbox probe is failing and since when?")
    zh = built("哪个拨测挂了，从什么时候开始的？")
    scrape = built("billing 的 node 挂了吗", world="second")

    assert (probe.query, probe.computation, probe.label) == (
        'probe_success{job="blackbox"}',
        "down",
        "probe_success",
    )
    assert (zh.query, zh.computation) == ("probe_success", "down")
    assert (scrape.metric, scrape.computation) == ("up", "down")


def test_a_trends_rate_is_over_the_range_it_is_given_and_a_rates_word_is_no_ratio():
    trend = built("过去 10 分钟 nginx 请求速率的走势", window_minutes=1)
    english = built("How did nginx's request rate change?", window_minutes=1)

    assert trend.query == english.query == 'sum (rate(nginx_http_requests_total{job="nginx"}[1m]))'
    assert trend.computation == "rate"


def test_a_gauge_is_its_sample_on_the_subject():
    memory = built("how much memory does redis use")

    assert memory.query == 'redis_memory_used_bytes{job="redis"}'
    assert memory.said("1073741824") == "1073741824 字节（1.00 GiB）"
    assert memory.said("3145728") == "3145728 字节（3.00 MiB）"


def test_a_duration_under_a_second_is_said_in_milliseconds_beside_its_seconds():
    latency = built("p99 of Prometheus's own query handler")

    assert latency.said("0.245") == "0.245 秒（245.00 毫秒）"
    assert latency.said("2.5") == "2.5 秒"
    assert latency.said("NaN") == "NaN"


def test_a_subject_no_metric_of_the_words_carries_is_said_never_swapped():
    gap = measure("nginx 5xx 占比")
    pg = measure("billing 的死锁", world="second")

    assert isinstance(gap, MeasureGap)
    assert "5xx" in gap.why
    assert isinstance(pg, MeasureGap)
    assert "死锁" in pg.why


def test_the_demo_worlds_samples_are_measured_on_their_own_labels():
    catalog = DemoWorldSource().metric_catalog(now=NOW)
    found = metrics_searched("payment-service CPU 使用率", metric_catalog=catalog, vocabulary=SHIPPED)

    result = measure_built(found.reading, found.hits, metric_catalog=catalog, carrier=None, label_names=None)

    assert isinstance(result, Measure)
    assert result.query == 'cpu_usage_percent{service="payment-service"}'
    assert result.said("92") == "92%"


def test_an_empty_catalog_builds_nothing():
    found = metrics_searched("nginx 每秒请求", metric_catalog=MetricCatalog())

    assert (
        measure_built(
            found.reading, found.hits, metric_catalog=MetricCatalog(), carrier=None, label_names=None
        )
        is None
    )


def test_every_number_said_is_written_as_the_evidence_ref_writes_the_sample():
    rate, latency = built("nginx 每秒多少请求"), built("p99 of Prometheus's own query handler")

    for raw in ("0.000123456789", "1.5e+03", "42"):
        record = SeriesRecord(metric={}, value=[NOW.timestamp(), raw])
        written = record.ref_text().split("当前值 ")[1].split("（")[0]
        assert rate.said(raw).startswith(f"{written} ")
        assert latency.said(raw).startswith(f"{written} ")
