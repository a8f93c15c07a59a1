"""The metric catalog as the sources have it: Prometheus's metadata, series names and label values
(captured from real exporters), the demo world's and a case's samples from their own records, each
bounded; a source that fails gives no catalog, never a failed session."""

from __future__ import annotations

import json

import pytest

from tests.tools.exporters import NOW, CapturedPrometheus, capture, exporter_catalog, second_world_catalog
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.metric_catalog import (
    MAX_LABEL_VALUES,
    MetricCatalog,
    catalog_from_metadata,
    catalog_from_records,
)
from tools.sources import source_for, sources_catalog
from tools.sources.demo import DATA_DIR, DemoWorldSource
from tools.sources.fixture import FixtureSource


def test_each_family_has_its_type_help_unit_and_the_series_it_is_written_as():
    catalog = exporter_catalog()

    histogram = catalog.entry("prometheus_http_request_duration_seconds_bucket")
    assert histogram.name == "prometheus_http_request_duration_seconds"
    assert histogram.type == "histogram"
    assert histogram.help == "Histogram of latencies for HTTP requests."
    assert histogram.measured() == "seconds"
    assert set(histogram.series) == {f"{histogram.name}_{end}" for end in ("bucket", "sum", "count")}
    summary = catalog.entry("go_gc_duration_seconds_count")
    assert (summary.name, summary.type) == ("go_gc_duration_seconds", "summary")
    assert "go_gc_duration_seconds" in summary.series
    counter = catalog.entry("pg_stat_database_xact_rollback")
    assert (counter.type, counter.help) == (
        "counter",
        "Number of transactions in this database that have been rolled back",
    )
    assert catalog.entry("node_cpu_seconds_total").measured() == "seconds"
    assert catalog.entry("redis_memory_max_bytes").measured() == "bytes"


def test_a_metric_no_metadata_describes_is_kept_as_unknown():
    catalog = exporter_catalog()

    assert "up" not in capture()["metadata"]
    assert catalog.entry("up").type == "unknown"
    assert catalog.entry("up").series == ("up",)


def test_the_values_of_the_labels_that_name_things_are_kept_and_structural_labels_are_not():
    catalog = exporter_catalog()

    assert "shop" in catalog.values["datname"]
    assert "http://127.0.0.1:19300/" in catalog.values["instance"]
    assert "/api/v1/query" in catalog.values["handler"]
    assert {"idle", "iowait"} <= set(catalog.values["mode"])
    assert catalog.labels_with("shop") == ["datname"]
    assert not {"le", "quantile", "__name__"} & set(catalog.values)


def test_a_label_with_more_values_than_the_bound_names_no_one_thing_and_is_left_out():
    answers = capture() | {
        "values": capture()["values"] | {"request_id": [str(n) for n in range(MAX_LABEL_VALUES + 1)]}
    }

    catalog = CapturedPrometheus(answers).metric_catalog(now=NOW)

    assert "request_id" not in catalog.values
    assert catalog.crowded_labels == ("request_id",)


def test_families_past_the_bound_are_counted_not_kept(monkeypatch):
    families = len(exporter_catalog().metrics)
    monkeypatch.setattr("tools.metric_catalog.MAX_METRICS", 10)

    catalog = catalog_from_metadata(metadata=capture()["metadata"], names=capture()["names"], values={})

    assert len(catalog.metrics) == 10
    assert catalog.metrics_left_out == families - 10


def test_a_catalog_is_read_with_a_handful_of_requests_each_bounded():
    source = CapturedPrometheus()

    source.metric_catalog(now=NOW)

    paths = [path for path, _ in source.asked]
    assert paths[:3] == ["/api/v1/metadata", "/api/v1/label/__name__/values", "/api/v1/labels"]
    assert len(paths) == 3 + len(capture()["values"]) - 2  # every label but le and quantile
    assert all("limit" in params for _, params in source.asked)


def test_the_second_world_catalog_names_its_services_and_jobs():
    catalog = second_world_catalog()

    assert {"billing", "ledger-service"} <= set(catalog.values["service"])
    assert {"billing-node", "ledger-node", "node"} <= set(catalog.values["job"])
    assert catalog.entry("node_filesystem_avail_bytes").type == "gauge"
    assert not any(entry.name.startswith("pg_") for entry in catalog.metrics)


def test_the_demo_world_catalog_is_the_samples_its_own_records_carry():
    logs = json.loads((DATA_DIR / "logs.json").read_text(encoding="utf-8"))
    sampled = {name: record for record in logs for name in record.get("metrics") or {}}

    catalog = DemoWorldSource().metric_catalog(now=NOW)

    assert {entry.name for entry in catalog.metrics} == set(sampled)
    for name, record in sampled.items():
        entry = catalog.entry(name)
        assert entry.type == "gauge"
        assert record["service"] in entry.values["service"]
        assert entry.labels == ("service", "instance")
    assert set(catalog.values["service"]) == {r["service"] for r in logs if r.get("metrics")}


@pytest.mark.django_db
def test_a_cases_catalog_follows_its_log_records_and_replaces_the_demo_worlds_with_them(settings):
    record = {
        "minutes_ago": 1,
        "service": "checkout",
        "instance": "checkout-1",
        "message": "queue depth 12",
        "metrics": {"queue_depth": 12},
    }
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "FIXTURE_TOOL_DATA": {"query_logs": {"mode": "replace", "records": [record]}}
    }
    assert [entry.name for entry in FixtureSource().metric_catalog(now=NOW).metrics] == ["queue_depth"]

    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "FIXTURE_TOOL_DATA": {"query_logs": {"mode": "merge", "records": [record]}}
    }
    merged = FixtureSource().metric_catalog(now=NOW)
    assert merged.entry("queue_depth") and merged.entry("cpu_usage_percent")
    assert "checkout" in merged.values["service"]


def test_records_without_samples_make_an_empty_catalog():
    catalog = catalog_from_records([{"service": "checkout", "message": "ok"}], labels=("service",))

    assert catalog.empty
    assert catalog == MetricCatalog()


@pytest.mark.django_db
def test_the_catalog_comes_from_prometheus_when_it_is_set_and_else_from_the_demo_world(settings):
    assert source_for(MetricCatalogSource).provenance()[0] == "demo"
    assert sources_catalog(now=NOW).entry("cpu_usage_percent")

    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": "http://prometheus.invalid"}
    assert source_for(MetricCatalogSource).provenance()[0] == "prometheus"


@pytest.mark.django_db
def test_a_catalog_source_that_fails_gives_an_empty_catalog_and_a_warning(settings, caplog):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": "http://127.0.0.1:9", "SOURCE_TIMEOUT": 1}

    catalog = sources_catalog(now=NOW)

    assert catalog.empty
    assert "metric metadata of source prometheus" in caplog.text
