"""Evidence receipts: the requests a source really sent, captured where it sends them, with no credential
of any kind; and the output's hash, the same for the same data whatever its key order."""

import hashlib
import json
from datetime import UTC, datetime

import pytest

from tests.integration.stack import LOKI_TENANT, WORLD, free_port
from tests.loki_server import FakeLoki
from tests.prometheus_server import FakePrometheus
from tools.evidence.receipt import (
    MAX_REQUESTS,
    SourceRequest,
    output_digest,
    receipt_of,
    request_sent,
    requests_captured,
)
from tools.sources.http import SourceError
from tools.sources.loki import LokiSource
from tools.sources.prometheus import SERIES_LIMIT, PrometheusSource

NOW = datetime(2026, 12, 1, 12, 0, 7, tzinfo=UTC)
PASSWORD = "pr0m-s3cret"
TOKEN = "tok-9f8e7d"


@pytest.fixture
def prometheus(settings):
    """A Prometheus stand-in, its source configured with an API key header."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "SOURCE_HEADERS": {"prometheus": {"X-Api-Key": TOKEN}},
        "SOURCE_TIMEOUT": 3,
    }
    with FakePrometheus() as server:
        yield server


def test_an_instant_query_is_on_the_receipt_as_sent_without_the_password_or_the_token(prometheus):
    port = prometheus.port
    source = PrometheusSource(f"http://reader:{PASSWORD}@127.0.0.1:{port}/")

    with requests_captured() as sent:
        source.query_promql(query='up{job="node"}', minutes=0, now=NOW)

    assert sent == [
        SourceRequest(
            source="prometheus",
            base_url=f"http://127.0.0.1:{port}",
            path="/api/v1/query",
            query='up{job="node"}',
            time=str(NOW.timestamp()),
            limit=str(SERIES_LIMIT),
            params=[("timeout", "3")],
        )
    ]
    # Both went to the server, neither onto the receipt.
    [seen] = prometheus.requests
    headers = seen["headers"]
    assert headers["X-Api-Key"] == TOKEN and headers["Authorization"].startswith("Basic ")
    stored = json.dumps([request.model_dump(mode="json") for request in sent])
    assert PASSWORD not in stored and TOKEN not in stored and "reader" not in stored


def test_a_range_query_names_its_start_end_and_step(prometheus):
    source = PrometheusSource(f"http://127.0.0.1:{prometheus.port}")

    with requests_captured() as sent:
        source.query_promql(query="node_load1", minutes=30, now=NOW)

    [request] = sent
    assert request.path == "/api/v1/query_range"
    assert (request.end, request.step) == (str(NOW.timestamp()), "16")
    assert float(request.end) - float(request.start) <= 30 * 60
    assert request.time is None


def test_a_loki_search_lists_every_request_and_never_the_tenant(settings):
    streams = json.loads((WORLD / "loki_streams.json").read_text())
    with FakeLoki(streams, tenant=LOKI_TENANT) as loki:
        source = LokiSource(loki.url, tenant=LOKI_TENANT)

        with requests_captured() as sent:
            source.query_logs(query="OOMKilled", service="billing", topic=None, now=NOW)
        [logql] = source.logql(query="OOMKilled", service="billing")

    assert [request.path for request in sent] == ["/loki/api/v1/labels", "/loki/api/v1/query_range"]
    search = sent[1]
    assert search.query == logql
    assert search.end == str(int(NOW.timestamp() * 1e9)) and search.limit == "100"
    assert ("direction", "backward") in search.params
    assert LOKI_TENANT not in json.dumps([request.model_dump(mode="json") for request in sent])


def test_a_request_that_fails_was_still_sent_and_is_on_the_receipt(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"SOURCE_TIMEOUT": 2}
    port = free_port()  # nothing listens
    source = PrometheusSource(f"http://127.0.0.1:{port}")

    with requests_captured() as sent, pytest.raises(SourceError):
        source.query_promql(query="up", minutes=0, now=NOW)

    assert [(request.base_url, request.path, request.query) for request in sent] == [
        (f"http://127.0.0.1:{port}", "/api/v1/query", "up")
    ]


def test_requests_outside_a_call_are_kept_nowhere():
    request = SourceRequest(source="prometheus", base_url="http://p", path="/api/v1/labels")

    request_sent(request)  # no call is being recorded: nothing to put it on, and no error

    with requests_captured() as sent:
        pass
    assert sent == []


def test_a_parameter_given_twice_keeps_its_second_value_among_the_others():
    request = SourceRequest.sent(
        source="prometheus",
        base_url="http://p",
        path="/api/v1/series",
        params=[("limit", "5"), ("match[]", "up"), ("limit", "7")],
    )

    assert request.limit == "5"
    assert request.params == [("match[]", "up"), ("limit", "7")]
    assert request.text() == "GET http://p/api/v1/series?limit=5&match[]=up&limit=7"


def test_the_hash_is_of_canonical_json_whatever_the_key_order():
    output = {"success": True, "series": [{"metric": {"job": "node", "instance": "a"}, "value": [1, "0.5"]}]}
    reordered = {
        "series": [{"value": [1, "0.5"], "metric": {"instance": "a", "job": "node"}}],
        "success": True,
    }
    moved = {"success": True, "series": [{"metric": {"job": "node", "instance": "a"}, "value": [1, "0.6"]}]}

    assert output_digest(output) == output_digest(reordered)
    assert output_digest(output) != output_digest(moved)
    canonical = '{"series":[{"metric":{"instance":"a","job":"node"},"value":[1,"0.5"]}],"success":true}'
    assert output_digest(output) == hashlib.sha256(canonical.encode()).hexdigest()
    assert (
        output_digest({"message": "找到 1 条告警"})
        == hashlib.sha256('{"message":"找到 1 条告警"}'.encode()).hexdigest()
    )


def test_a_receipt_keeps_the_first_requests_and_counts_the_rest():
    sent = [
        SourceRequest(source="prometheus", base_url="http://p", path=f"/api/v1/label/l{n}/values")
        for n in range(MAX_REQUESTS + 3)
    ]

    receipt = receipt_of(source="prometheus", location="http://p", evaluated_at=NOW, sent=sent, output=None)

    assert receipt.requests == sent[:MAX_REQUESTS] and receipt.requests_omitted == 3
    assert receipt.output_sha256 is None
