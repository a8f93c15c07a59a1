"""The starter vocabulary (`manage.py vocabulary --from-prometheus`) over stored metadata: what the
exporter stack's Prometheus answered (nginx, PostgreSQL, Redis, blackbox, node exporters, Prometheus
and Alertmanager), and the demo and shop worlds' services as their libraries describe their metrics."""

import json
from functools import cache
from pathlib import Path

import pytest

from tools.promql import subject_query, syntax_error
from tools.terms import query_terms
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Vocabulary, vocabulary_checked, vocabulary_load
from tools.vocabulary_source import TEMPLATES_PER_TOPIC, vocabulary_from_source

SAMPLES = Path(__file__).with_name("vocabulary_samples")
WORLDS = ["exporter_stack", "demo", "shop"]


@cache
def sample(world: str) -> dict:
    return json.loads((SAMPLES / f"{world}.json").read_text(encoding="utf-8"))


def starter(world: str, *, asked: list[str] | None = None) -> Vocabulary:
    answers = sample(world)

    def label_names(series: str) -> frozenset[str]:
        if asked is not None:
            asked.append(series)
        return frozenset(answers["labels"].get(series, ()))

    return vocabulary_from_source(
        metadata=answers["metadata"],
        metric_names=answers["names"],
        rules=answers["rules"],
        label_names=label_names,
        quantile_values=lambda summary: answers["quantiles"].get(summary, []),
    )


def written(vocabulary: Vocabulary, folder: Path) -> Path:
    """The file as `--from-prometheus --out` writes it."""
    path = folder / "vocabulary.json"
    path.write_text(
        json.dumps(vocabulary.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, indent=2),
        encoding="utf-8",
    )
    return path


# --- The exporter stack ------------------------------------------------------------------------


def test_the_exporter_stack_gets_requests_errors_connections_locks_evictions_ratios_probes_and_saturation():
    topics = starter("exporter_stack").promql_topics

    assert {
        "requests",
        "error",
        "slow",
        "connection_pool",
        "locks",
        "evictions",
        "hit_ratio",
        "rollbacks",
        "probes",
        "saturation",
    } <= set(topics)
    assert topics["requests"][:2] == [
        'sum by (job) (rate(nginx_http_requests_total{job="{service}"}[5m]))',
        'sum by (job) (rate(prometheus_http_requests_total{job="{service}"}[5m]))',
    ]
    assert topics["error"][0] == 'sum by (job) (rate(redis_errors_total{job="{service}"}[5m]))'
    assert topics["connection_pool"][:3] == [
        'nginx_connections_active{job="{service}"}',
        'pg_stat_database_numbackends{job="{service}"}',
        'redis_connected_clients{job="{service}"}',
    ]
    assert 'pg_stat_activity_count{job="{service}"}' in topics["connection_pool"]
    assert topics["locks"][0] == 'sum by (job) (rate(pg_stat_database_deadlocks{job="{service}"}[5m]))'
    assert topics["evictions"] == ['sum by (job) (rate(redis_evicted_keys_total{job="{service}"}[5m]))']
    assert topics["probes"][0] == 'probe_success{job="{service}"}'
    assert all(len(templates) <= TEMPLATES_PER_TOPIC for templates in topics.values())


def test_latency_is_a_quantile_of_histograms_and_summaries_never_probe_scrape_or_setting_durations():
    slow = starter("exporter_stack").promql_topics["slow"]

    assert slow[0] == (
        "histogram_quantile(0.99, sum by (le, job) "
        '(rate(prometheus_http_request_duration_seconds_bucket{job="{service}"}[5m])))'
    )
    # A summary by its quantile label, at the level it has nearest 0.99 (Redis writes percents).
    assert 'redis_latency_percentiles_usec{job="{service}",quantile="99"}' in slow
    assert 'prometheus_engine_query_duration_seconds{job="{service}",quantile="0.99"}' in slow
    for not_latency in ("probe_", "scrape", "pg_settings_", "go_gc_"):
        assert not_latency not in " ".join(slow)


def test_settings_are_never_a_topic_of_their_own_only_the_limit_a_usage_is_read_against():
    topics = starter("exporter_stack").promql_topics

    for topic, templates in topics.items():
        for template in templates:
            if "pg_settings_" in template or "_config_" in template:
                assert topic == "saturation"
                assert template.index("pg_settings_" if "pg_settings_" in template else "_config_") > (
                    template.index(" / ")
                )


def test_a_hit_ratio_is_hits_against_hits_and_misses_and_a_rollback_ratio_against_commits():
    topics = starter("exporter_stack").promql_topics

    assert topics["hit_ratio"] == [
        'sum by (job) (rate(redis_keyspace_hits_total{job="{service}"}[5m])) / '
        '(sum by (job) (rate(redis_keyspace_hits_total{job="{service}"}[5m])) + '
        'sum by (job) (rate(redis_keyspace_misses_total{job="{service}"}[5m])))',
        'sum by (job) (rate(pg_stat_database_blks_hit{job="{service}"}[5m])) / '
        '(sum by (job) (rate(pg_stat_database_blks_hit{job="{service}"}[5m])) + '
        'sum by (job) (rate(pg_stat_database_blks_read{job="{service}"}[5m])))',
    ]
    assert topics["rollbacks"] == [
        'sum by (job) (rate(pg_stat_database_xact_rollback{job="{service}"}[5m])) / '
        '(sum by (job) (rate(pg_stat_database_xact_rollback{job="{service}"}[5m])) + '
        'sum by (job) (rate(pg_stat_database_xact_commit{job="{service}"}[5m])))'
    ]


def test_hits_without_misses_are_no_ratio():
    metadata = {"ledger_cache_hits_total": [{"type": "counter", "help": "Cache hits."}]}

    vocabulary = vocabulary_from_source(metadata=metadata, metric_names=metadata, rules=[])

    assert "hit_ratio" not in vocabulary.promql_topics


def test_saturation_is_a_gauge_against_its_sibling_limit():
    saturation = starter("exporter_stack").promql_topics["saturation"]

    assert (
        'sum by (job) (pg_stat_activity_count{job="{service}"}) / '
        '(sum by (job) (pg_settings_max_connections{job="{service}"}) > 0)'
    ) in saturation
    assert (
        'redis_connected_clients{job="{service}"} / (redis_config_maxclients{job="{service}"} > 0)'
        in saturation
    )
    assert (
        'redis_memory_used_bytes{job="{service}"} / (redis_memory_max_bytes{job="{service}"} > 0)'
        in saturation
    )
    # What is left, against its whole: series by series where both carry the same labels.
    assert (
        '1 - node_filesystem_avail_bytes{job="{service}"} / (node_filesystem_size_bytes{job="{service}"} > 0)'
    ) in saturation
    assert (
        '1 - node_memory_MemAvailable_bytes{job="{service}"} / (node_memory_MemTotal_bytes{job="{service}"} > 0)'
    ) in saturation
    # A limit per something, or of a duration, is no capacity of the whole.
    assert "max_locks_per_transaction" not in " ".join(saturation)
    assert "max_tx_duration" not in " ".join(saturation)


def test_alerts_take_the_topic_of_the_series_their_expr_reads():
    assert starter("exporter_stack").alert_topics == {
        "BlackboxProbeFailed": "probes",
        "BlackboxSlowProbe": "probes",
        "HostHighCpuUsage": "cpu",
        "HostOutOfDiskSpace": "disk",
        "NginxDown": "availability",
        "PostgresDown": "availability",
        "PostgresDeadlocksDetected": "locks",
        "PostgresHighRollbackRate": "rollbacks",
        "PostgresTooManyConnections": "connection_pool",
        "PrometheusSlowQueries": "slow",
        "RedisDown": "availability",
        "RedisEvictingKeys": "evictions",
        "RedisOutOfConfiguredMaxmemory": "memory",
    }


def test_a_template_reaches_a_subject_on_the_label_that_carries_it():
    topics = starter("exporter_stack").promql_topics

    def on_datname(metric: str, subject: str) -> str | None:
        return "datname" if metric.startswith("pg_stat_database") else None

    assert subject_query(topics["locks"][0], subject="shop", carrier=on_datname) == (
        'sum by (datname) (rate(pg_stat_database_deadlocks{datname="shop"}[5m]))'
    )
    assert subject_query(topics["slow"][0], subject="/api/v1/query", carrier=lambda m, s: "handler") == (
        "histogram_quantile(0.99, sum by (le, handler) "
        '(rate(prometheus_http_request_duration_seconds_bucket{handler="/api/v1/query"}[5m])))'
    )


def test_the_source_is_asked_the_labels_of_the_metrics_templates_are_written_for_only():
    asked: list[str] = []

    starter("exporter_stack", asked=asked)

    assert 0 < len(set(asked)) < len(sample("exporter_stack")["names"]) / 3


def test_without_the_labels_of_its_series_a_template_is_on_the_placeholder_label():
    answers = sample("exporter_stack")

    vocabulary = vocabulary_from_source(metadata=answers["metadata"], metric_names=answers["names"], rules=[])

    assert vocabulary.promql_topics["probes"][0] == 'probe_success{service="{service}"}'


# --- The demo and shop worlds --------------------------------------------------------------------


def test_the_demo_worlds_services_get_requests_latency_connections_and_their_limits():
    vocabulary = starter("demo")
    topics = vocabulary.promql_topics

    # A histogram's `_count` is its requests, its buckets its latency.
    assert topics["requests"] == [
        'sum by (service) (rate(http_server_requests_seconds_count{service="{service}"}[5m]))'
    ]
    assert topics["slow"] == [
        "histogram_quantile(0.99, sum by (le, service) "
        '(rate(http_server_requests_seconds_bucket{service="{service}"}[5m])))'
    ]
    assert topics["connection_pool"][0] == 'hikaricp_connections_active{service="{service}"}'
    assert topics["saturation"][:2] == [
        'hikaricp_connections_active{service="{service}"} / (hikaricp_connections_max{service="{service}"} > 0)',
        '1 - node_filesystem_avail_bytes{service="{service}"} / (node_filesystem_size_bytes{service="{service}"} > 0)',
    ]
    assert (
        'jvm_memory_used_bytes{service="{service}"} / (jvm_memory_max_bytes{service="{service}"} > 0)'
        in (topics["saturation"])
    )
    assert "jvm_gc_pause" not in json.dumps(topics)
    assert vocabulary.alert_topics == {
        "HighCPUUsage": "cpu",
        "HighMemoryUsage": "memory",
        "SlowResponse": "slow",
        "HighDiskUsage": "disk",
        "ServiceUnavailable": "availability",
    }


def test_the_shop_worlds_services_get_latency_locks_ratios_and_probes_on_their_own_labels():
    vocabulary = starter("shop")
    topics = vocabulary.promql_topics

    assert topics["slow"][0] == (
        "histogram_quantile(0.99, sum by (le, service) "
        '(rate(http_request_duration_seconds_bucket{service="{service}"}[5m])))'
    )
    for not_latency in ("probe_duration", "scrape_duration", "pg_settings_"):
        assert not_latency not in " ".join(topics["slow"])
    assert topics["requests"][0] == 'sum by (service) (rate(http_requests_total{service="{service}"}[5m]))'
    assert topics["locks"] == ['sum by (service) (rate(pg_stat_database_deadlocks{service="{service}"}[5m]))']
    assert "pg_stat_database_blks_read" in topics["hit_ratio"][0]
    assert "pg_stat_database_xact_commit" in topics["rollbacks"][0]
    # Probes carry no `service` label: their template is on the job.
    assert topics["probes"][0] == 'probe_success{job="{service}"}'
    assert vocabulary.alert_topics == {"HighRequestLatency": "slow"}


# --- Every world: it extends the shipped words, and checks ---------------------------------------


@pytest.mark.parametrize("world", WORLDS)
def test_the_starter_extends_the_shipped_vocabulary_and_each_of_its_terms_reaches_its_topic(world, tmp_path):
    vocabulary = starter(world)

    loaded = vocabulary_load(written(vocabulary, tmp_path))

    assert vocabulary.extends is True
    shipped = vocabulary_load(DEFAULT_VOCABULARY_FILE)
    for group, terms in shipped.groups.items():
        assert set(terms) <= set(loaded.groups[group])
    assert loaded.asks == shipped.asks
    # The shipped file's templates name the demo world's series: the starter's are the team's.
    assert loaded.promql_topics == vocabulary.promql_topics
    for topic, terms in vocabulary.groups.items():
        for term in terms:
            assert [group for group, _ in query_terms(term, vocabulary=loaded)] == [topic], term


@pytest.mark.parametrize("world", WORLDS)
def test_every_template_written_parses_and_the_file_checks(world, tmp_path):
    vocabulary = starter(world)

    assert vocabulary_checked(written(vocabulary, tmp_path)) == []
    for templates in vocabulary.promql_topics.values():
        for template in templates:
            assert syntax_error(template.replace("{service}", "subject")) is None, template
