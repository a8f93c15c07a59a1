"""`query_logs` from Loki, against the Loki-HTTP-API server of the tests."""

import json
from pathlib import Path

import pytest

from tests.loki_server import FakeLoki
from tests.tools.support import record
from tools.sources.loki import MAX_LINES

pytestmark = pytest.mark.django_db
STREAMS = json.loads((Path(__file__).parents[1] / "world" / "loki_streams.json").read_text())
LOGHUB = json.loads((Path(__file__).parents[1] / "world" / "loghub_streams.json").read_text())


@pytest.fixture
def session():
    from tests.factories import DiagnosisSessionFactory

    return DiagnosisSessionFactory()


@pytest.fixture
def loki(settings):
    with FakeLoki(STREAMS, tenant="team-a") as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LOKI_URL": server.url,
            "LOKI_TENANT": "team-a",
            "DEMO_NOW": None,
        }
        yield server


def test_logs_of_a_service_come_newest_first_with_labels_and_level(loki, session):
    invocation = record(session, "query_logs", query="billing", service="billing")

    assert (invocation.source, invocation.source_location) == ("loki", loki.url)
    logs = invocation.output["logs"]
    assert [log["message"] for log in logs] == [
        "payment capture failed: upstream timeout after 5000ms",
        "WARN retrying ledger sync, attempt 3",
        "container exited with OOMKilled, restarting",
    ]
    assert [log["level"] for log in logs] == ["ERROR", "WARN", "ERROR"]
    assert logs[0]["labels"] == {"service": "billing", "pod": "billing-7c9d-x1", "level": "error"}
    assert logs[0]["instance"] == "billing-7c9d-x1"
    assert invocation.evidence_refs[0]["text"].endswith(
        "[ERROR][billing] payment capture failed: upstream timeout after 5000ms"
    )


def test_the_logql_names_the_service_label_and_the_topic_terms_and_sends_the_tenant(loki, session):
    invocation = record(session, "query_logs", query="超时", service="billing")

    [request] = [r for r in loki.requests if r["path"] == "/loki/api/v1/query_range"]
    assert request["headers"]["X-Scope-OrgID"] == "team-a"
    assert request["params"]["query"].startswith('{service="billing"} |~ `')
    # Whole words: `timeout` between non-alphanumerics, or as a CamelCase part.
    assert "(?:^|[^A-Za-z0-9])(?i:timeout(?:s|es|d|ed|ing)?)(?:$|[^a-z0-9])" in request["params"]["query"]
    assert request["params"]["direction"] == "backward"
    assert [log["message"] for log in invocation.output["logs"]] == [
        "payment capture failed: upstream timeout after 5000ms"
    ]


def test_a_search_carries_a_line_limit_and_the_look_back_window(loki, session, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LOGS_WINDOW_MINUTES": 30}

    record(session, "query_logs", query="billing", service="billing")

    [request] = [r for r in loki.requests if r["path"] == "/loki/api/v1/query_range"]
    assert request["params"]["limit"] == str(MAX_LINES)
    start, end = int(request["params"]["start"]), int(request["params"]["end"])
    assert end - start == 30 * 60 * 10**9


def test_lines_outside_the_look_back_window_are_not_returned(loki, session, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LOGS_WINDOW_MINUTES": 1}

    invocation = record(session, "query_logs", query="startup", service="billing")

    assert invocation.evidence_status == "no_evidence"


def test_a_level_from_detected_level_label(loki, session):
    invocation = record(session, "query_logs", query="replication", service="ledger-service")

    [log] = invocation.output["logs"]
    assert log["level"] == "INFO"
    assert log["service"] == "ledger-service"


def test_a_wrong_tenant_is_a_failed_call_naming_loki(loki, session, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LOKI_TENANT": "team-b"}

    invocation = record(session, "query_logs", query="OOM", service="billing")

    assert not invocation.success
    assert f"loki {loki.url}: HTTP 401: no org id" in invocation.error


def test_the_inventory_names_the_values_of_the_service_label(loki):
    from tools.clock import now
    from tools.sources import sources_inventory

    assert {"billing", "ledger-service"} <= sources_inventory(now=now()).services


@pytest.fixture
def loghub(settings):
    with FakeLoki(LOGHUB) as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LOKI_URL": server.url,
            "LOKI_TENANT": None,
            "DEMO_NOW": None,
        }
        yield server


def test_an_error_search_where_a_level_label_exists_filters_by_it_in_the_selector(loki, session):
    invocation = record(session, "query_logs", query="error", service="billing")

    queries = [r["params"]["query"] for r in loki.requests if r["path"] == "/loki/api/v1/query_range"]
    assert queries[0].startswith('{service="billing", level=~"(?i)(error|')
    assert queries[1].startswith('{service="billing", level=""} |~ `')
    assert {log["level"] for log in invocation.output["logs"]} == {"ERROR"}
    assert "WARN retrying ledger sync, attempt 3" not in [log["message"] for log in invocation.output["logs"]]


def test_an_error_search_without_a_level_label_keeps_lines_whose_parsed_level_is_an_error(loghub, session):
    invocation = record(session, "query_logs", query="error", service="zookeeper")

    [query] = [r["params"]["query"] for r in loghub.requests if r["path"] == "/loki/api/v1/query_range"]
    assert query.startswith('{service="zookeeper"} |~ `')
    logs = invocation.output["logs"]
    assert len(logs) == 4
    assert {log["level"] for log in logs} == {"ERROR"}
    assert all("CancelledKeyException" in log["message"] for log in logs)


def test_info_lines_are_never_returned_for_errors(loghub, session):
    invocation = record(session, "query_logs", query="报错", service="cart-api")

    assert invocation.evidence_status == "no_evidence"


def test_slow_is_a_whole_word_never_inside_a_hostname(loghub, session):
    invocation = record(session, "query_logs", query="slow", service="cart-api")

    assert invocation.evidence_status == "no_evidence"


def test_a_timeout_search_finds_time_out_phrases_and_the_negotiated_timeout_lines_by_word(loghub, session):
    invocation = record(session, "query_logs", query="timeout", service="zookeeper")

    messages = [log["message"] for log in invocation.output["logs"]]
    assert sum("Notification time out: 60000" in m for m in messages) == 7
    assert sum("negotiated timeout 10000" in m for m in messages) == 5
    assert all(log["level"] == "INFO" for log in invocation.output["logs"])


def test_a_camel_case_term_is_searched_by_its_humps(loki, session):
    invocation = record(session, "query_logs", query="OOMKilled", service="billing")

    [request] = [r for r in loki.requests if r["path"] == "/loki/api/v1/query_range"]
    assert "OOMKilled(?:s|es|d|ed|ing)?(?:$|[^a-z])" in request["params"]["query"]
    assert [log["message"] for log in invocation.output["logs"]] == [
        "container exited with OOMKilled, restarting"
    ]
