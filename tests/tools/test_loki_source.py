"""`query_logs` from Loki, against the Loki-HTTP-API server of the tests."""

import json
import re
from datetime import datetime
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


# --- count_logs: lines counted by their format over the whole window ---------------------------------


def in_window(service: str, contains: str = "", *, filename: str = "") -> list[str]:
    """The lines of the second world's streams within the hour, read here from the file."""
    return [
        entry["line"]
        for stream in STREAMS
        if stream["stream"]["service"] == service and filename in stream["stream"].get("filename", "")
        for entry in stream["lines"]
        if entry["seconds_ago"] < 3600 and contains in entry["line"]
    ]


def metric_queries(loki: FakeLoki) -> list[str]:
    return [r["params"]["query"] for r in loki.requests if r["path"] == "/loki/api/v1/query"]


def test_404s_are_counted_by_path_over_the_window_with_the_logql_in_the_evidence(loki, session):
    invocation = record(session, "count_logs", measure="path", status="404", service="edge-proxy")

    not_found = in_window("edge-proxy", '" 404 ', filename="access.log")
    total, *paths = invocation.output["counts"]
    assert total["group"] == {} and total["count"] == len(not_found) == 7
    assert [(p["group"]["path"], p["count"]) for p in paths] == [
        (path, sum(f" {path} " in line for line in not_found))
        for path in ("/api/v1/legacy-cart", "/favicon.ico", "/wp-login.php")
    ]
    sent = metric_queries(loki)
    assert any(
        q.startswith('topk(10, sum by (path) (count_over_time({service="edge-proxy"} | pattern `')
        for q in sent
    )
    assert all('| status="404" | __error__="" [60m]' in q for q in sent)
    assert invocation.output["queries"] == sent
    # The count's ref text is what a claim cites: the number and the query as sent.
    assert invocation.evidence_refs[0]["text"].startswith(
        "[最近 60 分钟][edge-proxy] 状态码 404 的访问日志：7 条（LogQL sum("
    )


def test_slow_statements_are_postgres_durations_over_the_threshold_with_the_slowest_line(loki, session):
    invocation = record(session, "count_logs", measure="slow", service="ledger-db")

    [count] = invocation.output["counts"]
    durations = [
        float(line.split("duration: ")[1].split(" ms")[0]) for line in in_window("ledger-db", "duration: ")
    ]
    assert count["count"] == sum(d > 1000 for d in durations) == 3
    assert count["slowest_ms"] == "4105.77" and "4105.770 ms  statement: SELECT a.id" in count["line"]
    assert any(
        q.startswith("max(max_over_time(") and "| unwrap duration_ms" in q for q in metric_queries(loki)
    )


def test_a_threshold_of_the_call_s_own_is_used(loki, session):
    invocation = record(session, "count_logs", measure="slow", service="edge-proxy", slower_than_ms=2000)

    [count] = invocation.output["counts"]
    assert (count["count"], count["slowest_ms"], count["slower_than_ms"]) == (2, "60001", "2000")
    assert "| request_time > 2 |" in metric_queries(loki)[0]


def test_postgres_errors_are_counted_by_sqlstate_class(loki, session):
    invocation = record(session, "count_logs", measure="class", service="ledger-db")

    total, *classes = invocation.output["counts"]
    errors = [line for line in in_window("ledger-db") if " ERROR:  " in line or " FATAL:  " in line]
    assert total["count"] == len(errors) == 7
    assert {c["group"]["class"]: c["count"] for c in classes} == {
        "40 Transaction Rollback": 2,
        "23 Integrity Constraint Violation": 2,
        "53 Insufficient Resources": 2,
        "57 Operator Intervention": 1,
    }
    assert any("sum by (sqlstate)" in q for q in metric_queries(loki))


def test_nginx_errors_are_counted_by_failed_call_and_errno(loki, session):
    invocation = record(session, "count_logs", measure="class", service="edge-proxy")

    total, *classes = invocation.output["counts"]
    assert total["count"] == len(in_window("edge-proxy", "[error]")) == 6
    assert [(c["group"]["class"], c["count"]) for c in classes] == [
        ("connect() failed (111: Connection refused)", 3),
        ("open() failed (2: No such file or directory)", 2),
        ("(110: Connection timed out)", 1),
    ]


def test_json_and_logfmt_lines_are_counted_by_their_keys(loki, session):
    pricing = record(session, "count_logs", measure="class", service="pricing").output["counts"]
    gateway = record(session, "count_logs", measure="path", status="5xx", service="payments-gateway").output[
        "counts"
    ]

    assert [(c["group"].get("class"), c["count"]) for c in pricing] == [
        (None, 3),
        ("TimeoutError", 2),
        ("ConnectionError", 1),
    ]
    assert [(c["group"].get("path"), c["count"]) for c in gateway] == [(None, 3), ("/api/pay", 3)]
    assert any(
        q.startswith('topk(10, sum by (error_type) (count_over_time({service="pricing"} |~ `^\\s*\\{` | json')
        for q in metric_queries(loki)
    )


def test_lines_logql_cannot_read_are_counted_over_the_newest_lines_and_said_so(loghub, session):
    invocation = record(session, "count_logs", measure="slow", service="compute")

    [count] = invocation.output["counts"]
    took = [float(line.split("Took ")[1].split(" seconds")[0]) for line in in_loghub("compute")]
    assert count["count"] == sum(seconds > 1 for seconds in took) == 4
    assert count["slowest_ms"] == "20580" and count["query"] == ""
    assert count["counted_over"] == "window"
    assert "（窗口内全部日志）" in invocation.evidence_refs[0]["text"]
    assert not metric_queries(loghub)


def test_nothing_to_count_is_a_no_hit(loghub, session):
    invocation = record(session, "count_logs", measure="slow", service="cart-api")

    assert invocation.evidence_status == "no_evidence"
    assert invocation.output["message"] == "最近 60 分钟没有可统计的日志"


def in_loghub(service: str) -> list[str]:
    return [
        entry["line"]
        for stream in LOGHUB
        if stream["stream"]["service"] == service
        for entry in stream["lines"]
    ]


# --- The same counts on the lines a real stack wrote: the exporters world's nginx, PostgreSQL 15 and
# Redis 7 logs as Loki served them to the recorder (`truth.json`), counted again here by plain text. ---

TRUTH = json.loads(
    (
        Path(__file__).parents[2] / "diagnosis" / "evaluation" / "worlds" / "exporters" / "truth.json"
    ).read_text()
)


def truth_streams() -> list[dict]:
    """The recorded window's streams, each line at its age when the recorder read them."""
    at_ns = int(datetime.fromisoformat(TRUTH["at"]).timestamp() * 10**9)
    return [
        {
            "stream": stream["stream"],
            "lines": [
                {"seconds_ago": (at_ns - int(ns)) / 10**9, "line": line} for ns, line in stream["values"]
            ],
        }
        for body in TRUTH["logs"].values()
        for stream in body["result"]
    ]


def truth_lines(job: str) -> list[str]:
    return [line for stream in TRUTH["logs"][job]["result"] for _, line in stream["values"]]


@pytest.fixture
def exporter_logs(settings):
    with FakeLoki(truth_streams()) as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LOKI_URL": server.url,
            "LOKI_TENANT": None,
            "DEMO_NOW": None,
        }
        yield server


def test_real_nginx_404s_by_path(exporter_logs, session):
    not_found = [
        line.split('"')[1].split()[1] for line in truth_lines("nginx") if re.search(r'" 404 \d', line)
    ]

    total, *paths = record(session, "count_logs", measure="path", status="404", service="nginx").output[
        "counts"
    ]

    assert total["count"] == len(not_found)
    assert {p["group"]["path"]: p["count"] for p in paths} == {
        path: not_found.count(path) for path in set(not_found)
    }


def test_real_postgres_statements_over_a_second_and_the_slowest(exporter_logs, session):
    durations = [
        float(m[1]) for line in truth_lines("postgres") if (m := re.search(r"duration: ([0-9.]+) ms", line))
    ]

    [count] = record(session, "count_logs", measure="slow", service="postgres").output["counts"]

    assert count["count"] == sum(d > 1000 for d in durations) > 0
    assert float(count["slowest_ms"]) == max(durations)
    assert count["query"].startswith('sum(count_over_time({job="postgres"} |= "duration: " | regexp')


def test_real_postgres_errors_by_class_without_sqlstate_are_their_messages(exporter_logs, session):
    errors = [line for line in truth_lines("postgres") if re.search(r" (ERROR|FATAL|PANIC):  ", line)]
    deadlocks = sum(line.endswith("ERROR:  deadlock detected") for line in errors)

    total, *classes = record(session, "count_logs", measure="class", service="postgres").output["counts"]

    assert total["count"] == len(errors)
    assert {"class": "deadlock detected"} in [c["group"] for c in classes]
    assert next(c["count"] for c in classes if c["group"] == {"class": "deadlock detected"}) == deadlocks
    # Debian's prefix has no %e: no SQLSTATE to count by in LogQL, every line of the window counted in code.
    assert total["counted_over"] == "window" and total["query"] == ""


def test_a_logql_metric_query_answers_a_point_a_minute_with_a_quiet_minute_as_zero(settings, session):
    """The investigation's query for every service's error lines (`investigation.logs`): a service
    that wrote lines but no error line in a minute has a 0 there, one that wrote none has no series."""
    from diagnosis.pipeline.investigation.logs import log_errors_signal

    streams = [
        {"stream": {"service": "ledger"}, "lines": [
            {"seconds_ago": 30, "line": "ERROR ledger write failed"},
            {"seconds_ago": 40, "line": "ERROR ledger write failed"},
            {"seconds_ago": 150, "line": "INFO ledger synced"},
        ]},
        {"stream": {"service": "storefront"}, "lines": [{"seconds_ago": 90, "line": "INFO page served"}]},
    ]  # fmt: skip
    with FakeLoki(streams) as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LOKI_URL": server.url,
            "LOKI_TENANT": None,
            "DEMO_NOW": None,
        }
        invocation = record(session, "query_logql", query=log_errors_signal("service").query, minutes=4)

    series = {
        s["metric"]["service"]: [value for _, value in s["values"]] for s in invocation.output["series"]
    }
    assert series == {"ledger": ["0", "0", "2"], "storefront": ["0", "0"]}
    [request] = [r for r in server.requests if r["path"] == "/loki/api/v1/query_range"]
    assert request["params"]["step"] == "60s"
    assert invocation.evidence_refs[0]["text"].startswith('{service="ledger"} 最新值 2')


def test_a_services_line_patterns_are_a_series_each_with_a_quiet_minute_as_zero(settings, session):
    """Loki's `/loki/api/v1/patterns` for one service's streams: each pattern counted a minute, 0 in a
    minute its service wrote other lines, no point in a minute it wrote none; the selector's labels
    name every series. Another service's lines are not its patterns."""
    streams = [
        {"stream": {"service": "ledger", "pod": "ledger-1"}, "lines": [
            {"seconds_ago": 20, "line": "INFO entry 8812 posted in 12 ms"},
            {"seconds_ago": 25, "line": "INFO entry 8813 posted in 9 ms"},
            {"seconds_ago": 30, "line": "WARN balance check skipped for account 77"},
            {"seconds_ago": 200, "line": "INFO entry 8790 posted in 11 ms"},
        ]},
        {"stream": {"service": "storefront"}, "lines": [{"seconds_ago": 90, "line": "INFO page served"}]},
    ]  # fmt: skip
    with FakeLoki(streams) as server:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LOKI_URL": server.url,
            "LOKI_TENANT": None,
            "DEMO_NOW": None,
        }
        invocation = record(session, "query_log_patterns", query='{service="ledger"}', minutes=5)

    series = {
        s["metric"]["pattern"]: [value for _, value in s["values"]] for s in invocation.output["series"]
    }
    assert series == {
        "INFO entry <_> posted in <_> ms": ["1", "2"],
        "WARN balance check skipped for account <_>": ["0", "1"],
    }
    assert {s["metric"]["service"] for s in invocation.output["series"]} == {"ledger"}
    [request] = [r for r in server.requests if r["path"] == "/loki/api/v1/patterns"]
    assert request["params"]["query"] == '{service="ledger"}' and request["params"]["step"] == "60s"


def test_the_most_frequent_patterns_are_kept_and_the_rest_counted():
    from tools.sources.loki import MAX_SERIES, patterns_series

    patterns = [{"pattern": f"line kind {i} <_>", "samples": [[60, i + 1]]} for i in range(MAX_SERIES + 5)]
    answer = patterns_series(patterns, labels={"service": "ledger"})

    assert len(answer["series"]) == MAX_SERIES and answer["total_series"] == MAX_SERIES + 5
    assert answer["series"][0]["metric"] == {
        "service": "ledger",
        "pattern": f"line kind {MAX_SERIES + 4} <_>",
    }
