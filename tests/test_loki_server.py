"""The Loki test server answers the LogQL it supports as Loki documents it (shapes from
https://grafana.com/docs/loki/latest/reference/loki-http-api/ and the LogQL pages), over HTTP, and
refuses the rest with a 400 naming what it could not parse."""

import json
import time
from pathlib import Path

import httpx2
import pytest

from tests.loki_server import FakeLoki

WORLD = Path(__file__).parent / "world"
STREAMS = json.loads((WORLD / "loki_streams.json").read_text())
NS = 10**9


@pytest.fixture(scope="module")
def loki():
    with FakeLoki(STREAMS) as server:
        yield server


def get(loki: FakeLoki, path: str, **params) -> httpx2.Response:
    return httpx2.get(f"{loki.url}{path}", params=params, timeout=10)


def instant(loki: FakeLoki, query: str) -> list[dict]:
    response = get(loki, "/loki/api/v1/query", query=query, time=str(time.time_ns()))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "success" and body["data"]["resultType"] == "vector"
    return body["data"]["result"]


def values(result: list[dict], label: str = "") -> dict[str, str]:
    return {series["metric"].get(label, ""): series["value"][1] for series in result}


def lines(loki: FakeLoki, query: str, **params) -> list[str]:
    response = get(loki, "/loki/api/v1/query_range", query=query, **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["data"]["resultType"] == "streams"
    return [line for stream in body["data"]["result"] for _, line in stream["values"]]


def refused(loki: FakeLoki, path: str, query: str) -> str:
    response = get(loki, path, query=query)
    assert response.status_code == 400
    return response.text


def test_an_instant_metric_query_answers_a_vector_with_a_time_and_a_string_value(loki):
    [series] = instant(loki, 'sum(count_over_time({service="edge-proxy", filename=~".*access.log"}[60m]))')

    assert series["metric"] == {}
    at, value = series["value"]
    assert isinstance(at, float) and abs(at - time.time()) < 60
    # 15 access lines in the hour; the one two hours old is outside the range.
    assert value == "15"


def test_line_filters_and_a_pattern_with_label_filters_count_by_path(loki):
    pattern = '<_> - <_> [<_>] "<method> <path> <_>" <status> <_>'
    query = f'sum by (path) (count_over_time({{service="edge-proxy"}} |= "HTTP/1.1" | pattern `{pattern}` | status="404" [60m]))'

    assert values(instant(loki, query), "path") == {
        "/api/v1/legacy-cart": "4",
        "/favicon.ico": "2",
        "/wp-login.php": "1",
    }
    top = instant(loki, f"topk(2, {query})")
    # topk keeps the samples' labels, the largest first.
    assert [(s["metric"]["path"], s["value"][1]) for s in top] == [
        ("/api/v1/legacy-cart", "4"),
        ("/favicon.ico", "2"),
    ]


def test_numeric_label_filters_compare_numbers_and_a_status_regex_matches_whole(loki):
    pattern = '<_> - <_> [<_>] "<method> <path> <_>" <status> <_>'
    query = f'sum by (status) (count_over_time({{service="edge-proxy"}} | pattern `{pattern}` | status >= 500 | __error__="" [60m]))'

    assert values(instant(loki, query), "status") == {"502": "2", "504": "1"}
    five = f'sum(count_over_time({{service="edge-proxy"}} | pattern `{pattern}` | status=~"5.." [60m]))'
    assert values(instant(loki, five)) == {"": "3"}


def test_regexp_and_unwrap_give_durations_max_and_quantile(loki):
    pipeline = '{service="ledger-db"} |= "duration: " | regexp `duration: (?P<ms>[0-9.]+) ms`'

    assert values(instant(loki, f"sum(count_over_time({pipeline} | ms > 1000 [60m]))")) == {"": "3"}
    assert values(instant(loki, f"max(max_over_time({pipeline} | unwrap ms [60m]))")) == {"": "4105.77"}
    # Prometheus's quantile: linear between ranks of 812.304, 1520.004, 2336.512, 4105.77.
    assert values(
        instant(loki, f"quantile_over_time(0.5, {pipeline} | unwrap ms [60m]) by (service)"), "service"
    ) == {"ledger-db": "1928.258"}
    assert values(instant(loki, f"sum_over_time({pipeline} | unwrap ms [60m])"), "") == {"": "8774.59"}


def test_json_and_logfmt_extract_labels_and_unwrap_a_go_duration(loki):
    errors = 'sum by (error_type) (count_over_time({service="pricing"} | json | level="error" [60m]))'
    assert values(instant(loki, errors), "error_type") == {"TimeoutError": "2", "ConnectionError": "1"}

    slowest = 'max(max_over_time({service="payments-gateway"} | logfmt | unwrap duration(duration) | __error__="" [60m]))'
    assert values(instant(loki, slowest)) == {"": "5.002"}
    slow = 'sum(count_over_time({service="payments-gateway"} | logfmt | duration > 1s [60m]))'
    # A line without a duration keeps going with `__error__` set, and fails the metric query.
    assert "pipeline error: 'LabelFilterErr'" in refused(loki, "/loki/api/v1/query", slow)
    assert values(instant(loki, slow.replace(" [60m]", ' | __error__="" [60m]'))) == {"": "3"}


def test_a_metric_query_over_lines_a_parser_could_not_read_fails_as_loki_s_pipeline_error(loki):
    text = refused(loki, "/loki/api/v1/query", 'count_over_time({service="edge-proxy"} | json [60m])')

    assert "pipeline error: 'JSONParserErr'" in text
    assert 'Use a label filter to intentionally skip this error. (e.g | __error__!="JSONParserErr")' in text
    # Dropping them with `__error__=""` answers.
    assert instant(loki, 'sum(count_over_time({service="edge-proxy"} | json | __error__="" [60m]))') == []


def test_rate_is_lines_per_second_over_the_range(loki):
    query = 'sum(rate({service="edge-proxy", filename=~".*error.log"} |= "[error]" [10m]))'

    assert values(instant(loki, query)) == {"": "0.01"}


def test_a_metric_range_query_answers_a_matrix_of_the_steps_with_samples(loki):
    end = time.time_ns()
    response = get(
        loki,
        "/loki/api/v1/query_range",
        query='sum(count_over_time({service="ledger-db"} |= "ERROR:" [10m]))',
        start=str(end - 600 * NS),
        end=str(end),
        step="600",
    )

    body = response.json()
    assert body["data"]["resultType"] == "matrix"
    [series] = body["data"]["result"]
    assert series["metric"] == {}
    # Evaluated at start and at end: nothing in the ten minutes before start, so no point there.
    [(at, value)] = series["values"]
    assert (round(at), value) == (round(end / NS), "5")


def test_a_log_query_answers_streams_with_its_extracted_labels_newest_first(loki):
    response = get(
        loki, "/loki/api/v1/query_range", query='{service="pricing"} | json | level="error"', limit="2"
    )

    result = response.json()["data"]["result"]
    assert sum(len(stream["values"]) for stream in result) == 2
    assert all(stream["stream"]["logger"].startswith("pricing.") for stream in result)
    stamps = [int(ns) for stream in result for ns, _ in stream["values"]]
    assert max(stamps) > time.time_ns() - 60 * NS
    assert lines(loki, '{service="edge-proxy"} != "rt=" |~ "connect\\\\(\\\\) failed"')[:1] == [
        next(line for line in lines(loki, '{service="edge-proxy"}') if "connect() failed" in line)
    ]


@pytest.mark.parametrize(
    ("path", "query", "said"),
    [
        (
            "/loki/api/v1/query",
            '{service="edge-proxy"}',
            "log queries are not supported as an instant query type",
        ),
        (
            "/loki/api/v1/query",
            'count_over_time({service="edge-proxy"} | logfmt | unwrap rt [5m])',
            "invalid aggregation count_over_time with unwrap",
        ),
        (
            "/loki/api/v1/query",
            'sum_over_time({service="edge-proxy"} [5m])',
            "invalid aggregation sum_over_time without unwrap",
        ),
        (
            "/loki/api/v1/query_range",
            '{service=~".*"}',
            "queries require at least one regexp or equality matcher",
        ),
        (
            "/loki/api/v1/query_range",
            '{service="edge-proxy"} | line_format "{{.path}}"',
            "not supported by this test server",
        ),
        (
            "/loki/api/v1/query_range",
            '{service="edge-proxy"} | regexp `no names`',
            "at least one named capture",
        ),
        ("/loki/api/v1/query_range", '{service="edge-proxy"} | pattern `<a><b>`', "consecutive capture"),
        ("/loki/api/v1/query", 'count_over_time({service="edge-proxy"}[5minutes])', "parse error"),
    ],
)
def test_what_it_cannot_parse_is_a_400_that_says_so(loki, path, query, said):
    assert said in refused(loki, path, query)
