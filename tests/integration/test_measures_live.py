"""Queries by type on the live stack (§22): Prometheus scraping itself and node_exporter. Each question
is answered with a number that matches what the test reads from Prometheus itself with its own PromQL
for the same thing (at the sample's time, within a tolerance for samples still arriving), with its
unit, and with the PromQL the session sent in the evidence."""

import re
import time
from decimal import Decimal

import httpx2
import pytest

from tests.integration.test_answers_live import answer_of
from tests.integration.test_series_live import promql_calls

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
# A rate read a moment apart differs by the samples that arrived in between (1 s scrapes over 5 min).
RELATIVE_TOLERANCE = Decimal("0.05")
ABSOLUTE_TOLERANCE = Decimal("0.5")
# `<subject> 的 <what>：<number><unit>`, one per series, `；` between them.
SAID = re.compile(r"(?P<name>[^：；]+?) 的 (?P<what>[^：；]+)：(?P<number>-?[0-9.]+(?:e[-+]?\d+)?)")


@pytest.fixture
def prometheus_busy(stack):
    """Requests to Prometheus's query API, so its request counters and latency histogram have data.

    A handler's series appear at its first request, so one request comes first and the burst after a
    scrape: the rate over 5 min then has two different samples and is not zero (or NaN as a quantile)."""
    query_api = f"{stack.prometheus_url}/api/v1/query"
    httpx2.get(query_api, params={"query": "up"}, timeout=5)
    time.sleep(2)
    for _ in range(20):
        httpx2.get(query_api, params={"query": "up"}, timeout=5)
    rising = 'rate(prometheus_http_request_duration_seconds_count{handler="/api/v1/query"}[5m]) > 0'
    deadline = time.monotonic() + 30
    while not stack.prometheus("/api/v1/query", query=rising)["result"]:
        assert time.monotonic() < deadline, "Prometheus never saw its query API's requests rise"
        time.sleep(0.5)


def said(conclusion: str) -> list[tuple[str, Decimal]]:
    return [(m.group("name").strip(), Decimal(m.group("number"))) for m in SAID.finditer(conclusion)]


def sent(trace: dict) -> dict:
    """The PromQL call whose series the conclusion cites."""
    [call] = [i for i in promql_calls(trace) if i["output"].get("series")][:1]
    return call


def live(stack, query: str, at: float) -> list[dict]:
    return stack.prometheus("/api/v1/query", query=query, time=at)["result"]


def close(answered: Decimal, truth: str) -> bool:
    expected = Decimal(truth)
    return abs(answered - expected) <= max(
        ABSOLUTE_TOLERANCE * Decimal("0.01"), abs(expected) * RELATIVE_TOLERANCE
    )


def sample_time(call: dict) -> float:
    return float(call["output"]["series"][0]["value"][0])


def test_the_request_rate_of_a_counter_is_its_per_second_rate(team_sources, stack, prometheus_busy, capsys):
    trace, [conclusion] = answer_of("prometheus_http_requests_total 每秒请求数是多少", capsys)

    call = sent(trace)
    assert "rate(prometheus_http_requests_total" in call["input"]["query"]
    [(_, answered)] = said(conclusion)
    [truth] = live(stack, "sum(rate(prometheus_http_requests_total[5m]))", sample_time(call))
    assert close(answered, truth["value"][1]), (conclusion, truth)
    assert "次/秒" in conclusion
    assert trace["session"]["output_type"] == "NORMAL"


def test_the_p99_of_a_histogram_by_handler_is_one_number_per_handler(
    team_sources, stack, prometheus_busy, capsys
):
    trace, [conclusion] = answer_of(
        "prometheus_http_request_duration_seconds 按 handler 的 p99 是多少", capsys
    )

    call = sent(trace)
    assert call["input"]["query"].startswith("histogram_quantile(0.99, sum by (le, handler) (rate(")
    truth = {
        series["metric"]["handler"]: series["value"][1]
        for series in live(
            stack,
            "histogram_quantile(0.99, sum by (le, handler) (rate(prometheus_http_request_duration_seconds_bucket[5m])))",
            sample_time(call),
        )
        if series["value"][1] != "NaN"
    }
    answered = said(conclusion)
    assert answered and "秒" in conclusion
    for name, number in answered:
        handler = re.search(r"（(?P<handler>/[^）]*)）", name).group("handler")
        assert close(number, truth[handler]), (handler, number, truth[handler])
    assert "/api/v1/query" in conclusion


def test_cpu_usage_and_iowait_are_shares_of_cpu_time_by_mode(team_sources, stack, capsys):
    usage_trace, [usage] = answer_of("node 的 CPU 使用率是多少", capsys)
    iowait_trace, [iowait] = answer_of("node 的 iowait 占比是多少", capsys)

    for trace, conclusion, truth_query in (
        (usage_trace, usage, '100 * (1 - avg(rate(node_cpu_seconds_total{job="node",mode="idle"}[5m])))'),
        (iowait_trace, iowait, '100 * avg(rate(node_cpu_seconds_total{job="node",mode="iowait"}[5m]))'),
    ):
        call = sent(trace)
        assert "node_cpu_seconds_total" in call["input"]["query"]
        [(name, answered)] = said(conclusion)
        [truth] = live(stack, truth_query, sample_time(call))
        assert name == "node"
        assert close(answered, truth["value"][1]), (conclusion, truth)
        assert "%" in conclusion


def test_disk_used_is_one_minus_what_is_free_of_the_filesystems_size(team_sources, stack, capsys):
    trace, [conclusion] = answer_of("node 上 / 的磁盘使用率", capsys)

    call = sent(trace)
    assert "node_filesystem_avail_bytes" in call["input"]["query"]
    assert "node_filesystem_size_bytes" in call["input"]["query"]
    [(name, answered)] = said(conclusion)
    [truth] = live(
        stack,
        '100 * (1 - node_filesystem_avail_bytes{job="node",mountpoint="/"}'
        ' / node_filesystem_size_bytes{job="node",mountpoint="/"})',
        sample_time(call),
    )
    assert close(answered, truth["value"][1]), (conclusion, truth)
    assert name == "node、/"


def test_words_that_name_nothing_on_the_stack_are_said_to_and_never_answered_with_another_metric(
    team_sources, stack, capsys
):
    trace, conclusions = answer_of("redis 每秒驱逐多少个 key", capsys)

    assert conclusions == []
    assert "指标目录中没有与「" in trace["session"]["answer"]
    assert trace["session"]["output_type"] != "NORMAL"
    assert not [i for i in promql_calls(trace) if "evict" in i["input"]["query"]]
