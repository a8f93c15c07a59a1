"""How the Prometheus source asks for a range: at most 120 points, the last one now; the bounds every
query and label read carries; how it reads its retention (a window beyond it is answered with what
exists) and its scrape targets."""

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tools.clock import local_text
from tools.sources.prometheus import LABEL_VALUES_LIMIT, MAX_POINTS, SERIES_LIMIT, PrometheusSource

NOW = datetime(2026, 12, 1, 12, 0, 7, tzinfo=UTC)


class Recording(PrometheusSource):
    def __init__(self) -> None:
        super().__init__("http://prometheus.invalid")
        self.asked: list[tuple[str, dict]] = []

    def data(self, path, params=None, *, object_hook=None):
        self.asked.append((path, params))
        return {"resultType": "matrix", "result": []}


@pytest.mark.parametrize("minutes", [1, 7, 60, 360, 1440])
def test_a_range_ends_on_a_point_at_now_with_at_most_120_points(minutes):
    source = Recording()

    source.query_promql(query="up", minutes=minutes, now=NOW)

    [(path, params)] = source.asked
    assert path == "/api/v1/query_range"
    assert params["end"] == NOW.timestamp()
    span = params["end"] - params["start"]
    assert span % params["step"] == 0  # points at start + k·step: the last is `end`
    assert span // params["step"] + 1 <= MAX_POINTS
    assert minutes * 60 - params["step"] < span <= minutes * 60


class Asked(BaseHTTPRequestHandler):
    """Answers every GET with an empty success and keeps the query string it was asked with."""

    def log_message(self, *_):
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        self.server.asked.append((parts.path, parse_qs(parts.query)))
        data = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def prometheus_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Asked)
    server.asked = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("minutes", [0, 30])
def test_a_query_carries_the_source_timeout_and_a_series_limit(prometheus_server, settings, minutes):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"SOURCE_TIMEOUT": 2.5}
    source = PrometheusSource(f"http://127.0.0.1:{prometheus_server.server_address[1]}")

    source.query_promql(query="up", minutes=minutes, now=NOW)

    [(path, params)] = prometheus_server.asked
    assert path == ("/api/v1/query_range" if minutes else "/api/v1/query")
    assert params["timeout"] == ["2.5"]  # seconds, as Prometheus reads a duration
    assert params["limit"] == [str(SERIES_LIMIT)]


def test_label_reads_carry_a_limit(prometheus_server):
    source = PrometheusSource(f"http://127.0.0.1:{prometheus_server.server_address[1]}")

    source.label_values("__name__")
    source.label_values("job", match="up")
    source.label_names(match="up")

    assert [(path, params["limit"]) for path, params in prometheus_server.asked] == [
        ("/api/v1/label/__name__/values", [str(LABEL_VALUES_LIMIT)]),
        ("/api/v1/label/job/values", [str(LABEL_VALUES_LIMIT)]),
        ("/api/v1/labels", [str(LABEL_VALUES_LIMIT)]),
    ]


class Canned(PrometheusSource):
    """Answers each path with its canned data, or fails as a server that is down; counts the asks."""

    def __init__(self, answers: dict) -> None:
        super().__init__("http://prometheus.invalid")
        self.answers = answers
        self.asked: list[str] = []

    def data(self, path, params=None, *, object_hook=None):
        self.asked.append(path)
        if path not in self.answers:
            raise self.error("无法连接（connection refused）")
        return self.answers[path]


def runtimeinfo(retention: object) -> Canned:
    return Canned({"/api/v1/status/runtimeinfo": {"storageRetention": retention, "CWD": "/"}})


@pytest.mark.parametrize(
    ("retention", "minutes"),
    [
        ("15d", 15 * 24 * 60),
        ("1y", 365 * 24 * 60),
        ("2w", 14 * 24 * 60),
        ("1d12h", 36 * 60),
        ("90m", 90),
        ("15d or 10GiB", 15 * 24 * 60),
        ("10GiB", None),
        ("", None),
        (None, None),
        ("forever", None),
    ],
)
def test_retention_is_the_time_limit_of_runtimeinfo_in_minutes(retention, minutes):
    assert runtimeinfo(retention).retention_minutes() == minutes


def test_retention_is_asked_once_per_source():
    source = runtimeinfo("15d")

    source.retention_minutes()
    source.retention_minutes()

    assert source.asked == ["/api/v1/status/runtimeinfo"]


@pytest.mark.parametrize("answers", [{}, {"/api/v1/status/runtimeinfo": ["not", "an", "object"]}])
def test_a_retention_the_server_cannot_tell_is_none_never_an_error(answers):
    assert Canned(answers).retention_minutes() is None


ACTIVE_TARGETS = {
    "activeTargets": [
        {
            "labels": {"instance": "127.0.0.1:9", "job": "payments-exporter", "service": "payments"},
            "scrapePool": "payments-exporter",
            "scrapeUrl": "http://127.0.0.1:9/metrics",
            "lastError": 'Get "http://127.0.0.1:9/metrics": dial tcp 127.0.0.1:9: connect: connection refused',
            "lastScrape": "2026-12-01T04:00:05.123456789Z",
            "health": "down",
        },
        {
            "labels": {"instance": "web-1:9100", "job": "node"},
            "scrapePool": "node",
            "scrapeUrl": "http://web-1:9100/metrics",
            "lastError": "",
            "lastScrape": "0001-01-01T00:00:00Z",
            "health": "unknown",
        },
    ]
}


def test_targets_are_read_from_the_active_targets():
    source = Canned({"/api/v1/targets": ACTIVE_TARGETS})

    down, unscraped = source.targets()

    assert down == {
        "job": "payments-exporter",
        "instance": "127.0.0.1:9",
        "health": "down",
        "last_error": 'Get "http://127.0.0.1:9/metrics": dial tcp 127.0.0.1:9: connect: connection refused',
        # In TIME_ZONE, as every tool prints times.
        "last_scrape": local_text(datetime(2026, 12, 1, 4, 0, 5, tzinfo=UTC)),
        "scrape_url": "http://127.0.0.1:9/metrics",
        "labels": {"instance": "127.0.0.1:9", "job": "payments-exporter", "service": "payments"},
    }
    assert (unscraped["health"], unscraped["last_scrape"], unscraped["last_error"]) == ("unknown", "", "")
