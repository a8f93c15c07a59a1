"""`search_metrics`: the metrics of the catalog a question's words are about, with the label values
they name, and the words that name nothing; a helper whose answer is never evidence."""

import pytest

from tests.tools.exporters import CapturedPrometheus
from tests.tools.support import use_source
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.series.source import SeriesSource
from tools.evidence.tool import get_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def exporters(settings):
    use_source(settings, CapturedPrometheus, MetricCatalogSource, SeriesSource)


def test_the_metrics_of_the_words_come_first_with_their_type_help_and_series(exporters, run_tool):
    result = run_tool("search_metrics", query="p99 of prometheus http request latency", limit=3)

    [first, *_] = result.details["metrics"]
    assert first["name"] == "prometheus_http_request_duration_seconds"
    assert first["type"] == "histogram"
    assert first["unit"] == "seconds"
    assert "prometheus_http_request_duration_seconds_bucket" in first["series"]
    assert len(result.details["metrics"]) <= 3
    assert not get_tool("search_metrics").is_evidence


def test_the_label_values_the_words_name_are_said_with_their_label(exporters, run_tool):
    result = run_tool("search_metrics", query="shop 数据库的回滚率")

    assert result.details["metrics"][0]["name"] == "pg_stat_database_xact_rollback"
    assert result.details["label_values"] == [{"label": "datname", "value": "shop"}]


def test_words_that_name_nothing_are_said_so(exporters, run_tool):
    result = run_tool("search_metrics", query="kafka 消息积压")

    assert result.details["unmatched"] == ["kafka"]


def test_where_prometheus_answers_each_hit_carries_the_query_its_type_asks(exporters, run_tool):
    rate = run_tool("search_metrics", query="nginx 每秒请求数", limit=1)
    p99 = run_tool("search_metrics", query="prometheus http request p99", limit=1)

    assert rate.details["metrics"][0]["promql"] == "sum (rate(nginx_http_requests_total[5m]))"
    assert p99.details["metrics"][0]["promql"] == (
        "histogram_quantile(0.99, sum by (le) (rate(prometheus_http_request_duration_seconds_bucket[5m])))"
    )


def test_the_demo_world_answers_with_its_own_samples_and_no_query_it_cannot_send(run_tool):
    result = run_tool("search_metrics", query="CPU 使用率")

    assert result.details["metrics"][0]["name"] == "cpu_usage_percent"
    assert "promql" not in result.details["metrics"][0]
