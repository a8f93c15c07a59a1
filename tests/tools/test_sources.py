"""Sources chosen by environment, and how a failing source is recorded."""

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.integration.stack import free_port
from tests.tools.support import record
from tools.evidence.alerts.source import AlertSource
from tools.evidence.logs.source import LogSource
from tools.evidence.registry import SOURCE_KINDS
from tools.evidence.series.source import SeriesSource
from tools.evidence.source import Source
from tools.inventory import SourceInventory
from tools.sources import settings_needed, source_for
from tools.sources.http import tls_context
from tools.sources.loki import LokiSource
from tools.sources.prometheus import PrometheusSource

pytestmark = pytest.mark.django_db
WORLD_RUNBOOKS = Path(__file__).parents[1] / "world" / "runbooks"


@pytest.fixture
def session():
    from tests.factories import DiagnosisSessionFactory

    return DiagnosisSessionFactory()


class Answering(BaseHTTPRequestHandler):
    """Answers every GET with the server's (status, body, delay)."""

    def log_message(self, *_):
        pass

    def do_GET(self):
        status, body, delay = self.server.answer
        self.server.seen_headers.append(dict(self.headers))
        time.sleep(delay)
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def http_server():
    servers = []

    def start(status: int, body: str, delay: float = 0.0) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Answering)
        server.answer, server.seen_headers = (status, body, delay), []
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    start.servers = servers
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def configure(settings, **values):
    settings.DIAGNOSIS = settings.DIAGNOSIS | values


def test_with_nothing_configured_every_tool_uses_the_demo_world(session):
    invocation = record(session, "query_alerts", alert_name="HighMemoryUsage")

    assert (invocation.source, invocation.source_location) == ("demo", "tools/data/demo_world")


def test_promql_without_prometheus_is_a_failed_call_that_says_what_to_configure(session):
    invocation = record(session, "query_promql", query="up")

    assert not invocation.success
    assert "DIAGNOSIS_PROMETHEUS_URL" in invocation.error


def test_an_explicit_source_class_wins_over_the_configured_source(settings):
    configure(
        settings,
        PROMETHEUS_URL="http://prom:9090",
        SOURCE_CLASSES={"alerts": "tools.sources.demo.DemoWorldSource"},
    )

    assert source_for(AlertSource).provenance()[0] == "demo"
    assert source_for(SeriesSource).provenance() == ("prometheus", "http://prom:9090")


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        (
            {},
            {
                "alerts": "demo",
                "series": None,
                "targets": None,
                "logs": "demo",
                "log_series": None,
                "log_patterns": None,
                "trace_calls": None,
                "trace_paths": None,
                "knowledge": "demo",
                "metric_catalog": "demo",
            },
        ),
        (
            {"ALERTMANAGER_URL": "http://am:9093", "PROMETHEUS_URL": "http://prom:9090"},
            {
                "alerts": "alertmanager+prometheus",
                "series": "prometheus",
                "targets": "prometheus",
                "logs": None,
                "log_series": None,
                "log_patterns": None,
                "trace_calls": None,
                "trace_paths": None,
                "knowledge": None,
                "metric_catalog": "prometheus",
            },
        ),
        (
            {"LOKI_URL": "http://loki:3100"},
            {
                "alerts": None,
                "series": None,
                "targets": None,
                "logs": "loki",
                "log_series": "loki",
                "log_patterns": "loki",
                "trace_calls": None,
                "trace_paths": None,
                "knowledge": None,
                "metric_catalog": None,
            },
        ),
        (
            {"TEMPO_URL": "http://tempo:3200"},
            {
                "alerts": None,
                "series": None,
                "targets": None,
                "logs": None,
                "log_series": None,
                "log_patterns": None,
                "trace_calls": "tempo",
                "trace_paths": "tempo",
                "knowledge": None,
                "metric_catalog": None,
            },
        ),
        (
            {"ALERTMANAGER_URL": "http://am:9093", "LOKI_URL": "http://loki:3100", "RUNBOOKS_DIR": "/srv/rb"},
            {
                "alerts": "alertmanager",
                "series": None,
                "targets": None,
                "logs": "loki",
                "log_series": "loki",
                "log_patterns": "loki",
                "trace_calls": None,
                "trace_paths": None,
                "knowledge": "runbooks",
                "metric_catalog": None,
            },
        ),
    ],
)
def test_each_kind_is_answered_by_the_first_configured_source_serving_it_and_by_none_beside_them(
    settings, configured, expected
):
    configure(settings, **configured)

    chosen = {name: source_for(kind) for name, kind in SOURCE_KINDS.items()}

    assert {name: source.provenance()[0] if source else None for name, source in chosen.items()} == expected


def test_with_any_source_of_the_team_configured_a_kind_without_one_is_never_the_demo_world(settings, session):
    configure(settings, PROMETHEUS_URL="http://127.0.0.1:9")

    invocation = record(session, "query_logs", query="error", service="order-service")

    assert not invocation.success
    assert invocation.source == ""
    assert invocation.error.endswith("未配置日志源：未设置 DIAGNOSIS_LOKI_URL")
    assert invocation.output.get("logs") is None


def test_a_kind_without_a_source_names_the_variable_that_would_configure_one():
    assert settings_needed(SeriesSource) == "DIAGNOSIS_PROMETHEUS_URL"
    assert settings_needed(AlertSource) == "DIAGNOSIS_ALERTMANAGER_URL 或 DIAGNOSIS_PROMETHEUS_URL"


class LogsOfItsOwn:
    """A team's log source that defines every method of the protocol without subclassing it."""

    def provenance(self):
        return "team-logs", "tests"

    def check(self):
        pass

    def skipped(self):
        return 0

    def inventory(self, *, now):
        return SourceInventory()

    def query_logs(self, *, query, service, topic, now):
        return []


class NoLogs(Source):
    """A source class named for logs that answers no log query."""


def test_a_named_source_class_is_checked_against_its_kind(settings):
    configure(settings, SOURCE_CLASSES={"logs": f"{__name__}.LogsOfItsOwn"})
    assert source_for(LogSource).provenance() == ("team-logs", "tests")

    configure(settings, SOURCE_CLASSES={"logs": f"{__name__}.NoLogs"})
    with pytest.raises(ImproperlyConfigured, match=f"{__name__}.NoLogs is not a LogSource"):
        source_for(LogSource)


def test_credentials_in_a_url_are_never_recorded(settings):
    configure(settings, LOKI_URL="https://user:secret@loki.example.org/")

    assert source_for(LogSource).provenance() == ("loki", "https://loki.example.org")


@pytest.mark.parametrize(
    ("status", "body", "cause"),
    [
        (500, "upstream exploded", "HTTP 500: upstream exploded"),
        (401, "", "HTTP 401"),
        (
            400,
            '{"status":"error","errorType":"bad_data","error":"1:6: parse error: unexpected end"}',
            "HTTP 400: 1:6: parse error: unexpected end",
        ),
        (200, "<html>not json</html>", "返回的不是 JSON"),
        (200, '{"status":"error","error":"x"}', "非 success"),
    ],
)
def test_a_source_answering_badly_is_a_failed_call_naming_it_and_the_cause(
    settings, session, http_server, status, body, cause
):
    url = http_server(status, body)
    configure(settings, PROMETHEUS_URL=url)

    invocation = record(session, "query_alerts")

    assert not invocation.success
    assert invocation.evidence_status == "failed"
    assert invocation.source == "prometheus"
    assert f"prometheus {url}: " in invocation.error
    assert cause in invocation.error
    assert invocation.output.get("alerts") is None


def test_a_refused_connection_names_the_source(settings, session):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configure(settings, ALERTMANAGER_URL=f"http://127.0.0.1:{port}")

    invocation = record(session, "query_alerts")

    assert invocation.source == "alertmanager"
    assert f"alertmanager http://127.0.0.1:{port}: 无法连接" in invocation.error


def test_a_slow_source_costs_at_most_the_source_timeout(settings, session, http_server):
    configure(settings, PROMETHEUS_URL=http_server(200, "{}", delay=3.0), SOURCE_TIMEOUT=0.5)

    started = time.monotonic()
    invocation = record(session, "query_promql", query="up")

    assert time.monotonic() - started < 2.0
    assert not invocation.success
    assert "超时" in invocation.error


def test_each_source_sends_its_own_headers(settings, session, http_server):
    url = http_server(200, '{"status":"success","data":{"groups":[]}}')
    configure(
        settings,
        PROMETHEUS_URL=url,
        SOURCE_HEADERS={"prometheus": {"Authorization": "Bearer team-token"}, "loki": {"X-Other": "no"}},
    )

    invocation = record(session, "query_alerts")

    assert invocation.evidence_status == "no_evidence"
    [headers] = http_server.servers[-1].seen_headers
    assert headers["Authorization"] == "Bearer team-token"
    assert "X-Other" not in headers


def test_the_inventory_asks_the_sources_the_tools_use_and_skips_one_that_fails(settings, caplog):
    from tools.clock import now
    from tools.sources import sources_inventory

    down = f"http://127.0.0.1:{free_port()}"
    configure(settings, PROMETHEUS_URL=down, SOURCE_TIMEOUT=1.0, RUNBOOKS_DIR=str(WORLD_RUNBOOKS))

    inventory = sources_inventory(now=now())

    # Prometheus (alerts and PromQL) is down: logged and left out; no source serves the logs, and the
    # demo world's services never stand in for them.
    assert f"source prometheus {down} failed" in caplog.text
    assert "PostgresReplicationLag" in inventory.alerts
    assert {"KubePodCrashLooping", "postgres-replication"} <= inventory.runbooks
    assert inventory.services == set()


def test_every_source_client_shares_one_tls_context_instead_of_reading_the_ca_bundle_per_call():
    clients = [
        PrometheusSource("http://127.0.0.1:9090")._new_client(),
        PrometheusSource("https://prometheus.example:443")._new_client(),
        LokiSource("http://127.0.0.1:3100")._new_client(),
    ]

    assert {id(client._transport._pool._ssl_context) for client in clients} == {id(tls_context())}
