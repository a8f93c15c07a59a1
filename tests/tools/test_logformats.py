"""Log lines as their format has them, read by shape from the real-looking lines of the second world's
Loki (nginx access and error logs, PostgreSQL 15 with `%e` in its prefix and log_min_duration_statement,
Redis 7, logfmt, JSON) and the loghub OpenStack lines; what a line is slow or an error by follows."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from tools.logformats import (
    ACCESS,
    JSON,
    LOGFMT,
    NGINX_ERROR,
    PLAIN,
    POSTGRES,
    REDIS,
    fields_of,
    go_duration_ms,
    sqlstate_class,
)
from tools.loglines import has_property, level_of
from tools.vocabulary import vocabulary_load

ROOT = Path(__file__).parents[2]
WORLD = ROOT / "tests" / "world"
STREAMS = json.loads((WORLD / "loki_streams.json").read_text()) + json.loads(
    (WORLD / "loghub_streams.json").read_text()
)
VOCABULARIES = {
    "demo": ROOT / "tools" / "data" / "demo_world" / "vocabulary.json",
    "second": WORLD / "vocabulary.json",
}


def lines_of(service: str, filename: str = "") -> list[str]:
    return [
        line["line"]
        for stream in STREAMS
        if stream["stream"]["service"] == service and filename in stream["stream"].get("filename", "")
        for line in stream["lines"]
    ]


def line_with(service: str, text: str) -> str:
    return next(line for line in lines_of(service) if text in line)


@pytest.fixture(params=sorted(VOCABULARIES))
def vocabulary(request):
    return vocabulary_load(VOCABULARIES[request.param])


def test_each_stream_s_lines_are_read_in_its_own_format():
    formats = {
        ("edge-proxy", "access.log"): {ACCESS},
        ("edge-proxy", "error.log"): {NGINX_ERROR},
        ("ledger-db", ""): {POSTGRES},
        ("session-cache", ""): {REDIS},
        ("payments-gateway", ""): {LOGFMT},
        ("pricing", ""): {JSON},
        ("compute", ""): {PLAIN},
    }
    for (service, filename), expected in formats.items():
        assert {fields_of(line).format for line in lines_of(service, filename)} == expected, service


def test_an_nginx_access_line_has_its_status_path_method_upstream_and_request_time():
    fields = fields_of(line_with("edge-proxy", "/api/reports/monthly"))

    assert (fields.method, fields.path, fields.status) == ("GET", "/api/reports/monthly", "504")
    assert fields.upstream == "127.0.0.1:18081"
    assert fields.duration_ms == Decimal("60001")
    # A 404 served by nginx itself has no upstream (`ua="-"`).
    assert fields_of(line_with("edge-proxy", "/wp-login.php")).upstream == ""


@pytest.mark.parametrize(
    ("line", "status", "duration_ms"),
    [
        # Apache and nginx `combined` as shipped: no request time.
        (
            '192.168.1.20 - - [28/Jul/2006:10:27:10 -0300] "GET /cgi-bin/try/ HTTP/1.0" 200 3395 "-" "Mozilla/5.0"',
            "200",
            None,
        ),
        # `combined` with `$request_time` appended.
        (
            '10.0.0.5 - alice [02/Dec/2026:01:10:06 +0000] "POST /api/pay HTTP/2.0" 502 157 "-" "okhttp/4.12" 1.250',
            "502",
            Decimal("1250"),
        ),
        # OpenStack's WSGI server: a request line, then `status: N len: N time: F`.
        (line_with("cart-api", "servers/detail"), "200", Decimal("247.7829")),
    ],
)
def test_other_access_shapes_are_access_lines(line, status, duration_ms):
    fields = fields_of(line)

    assert (fields.format, fields.status, fields.duration_ms) == (ACCESS, status, duration_ms)


def test_an_nginx_error_line_names_its_failed_call_with_the_errno_and_the_upstream():
    refused = fields_of(line_with("edge-proxy", "connect() failed"))
    missing = fields_of(line_with("edge-proxy", "open()"))
    timed_out = fields_of(line_with("edge-proxy", "upstream timed out"))

    assert refused.error_class == "connect() failed (111: Connection refused)"
    assert refused.upstream == "http://127.0.0.1:18080/api/cart"
    assert (refused.method, refused.path) == ("GET", "/api/cart")
    assert missing.error_class == "open() failed (2: No such file or directory)"
    assert timed_out.error_class == "(110: Connection timed out)"
    assert [level_of(line) for line in lines_of("edge-proxy", "error.log")].count("ERROR") == 6
    assert level_of(line_with("edge-proxy", "buffered to a temporary file")) == "WARN"


def test_a_postgres_line_has_its_level_sqlstate_class_duration_and_statement():
    slow = fields_of(line_with("ledger-db", "4105.770 ms"))
    deadlock = fields_of(line_with("ledger-db", "deadlock detected"))
    too_many = fields_of(line_with("ledger-db", "too many clients"))

    assert slow.duration_ms == Decimal("4105.770")
    assert slow.statement.startswith("SELECT a.id, sum(e.amount)")
    assert (deadlock.sqlstate, deadlock.error_class) == ("40P01", "40 Transaction Rollback")
    assert (too_many.level, too_many.error_class) == ("FATAL", "53 Insufficient Resources")
    # `LOG` is PostgreSQL's informational level; DETAIL, HINT and STATEMENT continue the line before.
    assert level_of(line_with("ledger-db", "checkpoint starting")) == "INFO"
    assert level_of(line_with("ledger-db", "HINT:")) == ""
    assert level_of(line_with("ledger-db", "STATEMENT:  INSERT")) == ""
    assert fields_of(line_with("ledger-db", "STATEMENT:  INSERT")).error_class == ""


def test_a_postgres_prefix_without_sqlstate_still_reads_the_duration():
    line = "2026-12-02 01:10:06.123 UTC [4242] shop@shop LOG:  duration: 1520.004 ms  execute <unnamed>: SELECT 1"
    fields = fields_of(line)

    assert (fields.format, fields.sqlstate, fields.duration_ms) == (POSTGRES, "", Decimal("1520.004"))
    assert fields.statement == "SELECT 1"


def test_redis_levels_are_its_own_marks():
    assert level_of(line_with("session-cache", "Ready to accept connections")) == "INFO"
    assert level_of(line_with("session-cache", "Memory overcommit")) == "WARN"


def test_logfmt_and_json_lines_have_their_fields_by_key_as_loki_s_parsers_name_them():
    charge = fields_of(line_with("payments-gateway", "status=504"))
    lookup = fields_of(line_with("pricing", "price lookup failed"))

    assert (charge.path, charge.status, charge.duration_ms) == ("/api/pay", "504", Decimal("5002"))
    assert charge.error_class == "context deadline exceeded"
    assert (charge.label("duration"), charge.duration_unit) == ("duration", "go")
    assert (lookup.level, lookup.error_class, lookup.duration_ms) == (
        "error",
        "TimeoutError",
        Decimal("3004"),
    )
    # Nested keys are joined by `_`, as `| json` extracts them.
    assert lookup.label("class") == "error_type"
    assert level_of(line_with("pricing", "cache read failed")) == "ERROR"


def test_plain_lines_have_the_duration_they_say_something_took_and_an_exception_s_class():
    assert fields_of(line_with("compute", "Took 19.84 seconds")).duration_ms == Decimal("19840")
    assert fields_of(line_with("zookeeper", "CancelledKeyException")).error_class == (
        "java.nio.channels.CancelledKeyException"
    )
    # A timeout it waited for is no duration it took.
    assert fields_of("payment capture failed: upstream timeout after 5000ms").duration_ms is None


def test_slow_is_a_line_s_own_duration_above_the_threshold(vocabulary):
    def slow(line: str) -> bool:
        return has_property("slow", level=level_of(line), message=line, vocabulary=vocabulary)

    assert slow(line_with("ledger-db", "2336.512 ms"))
    assert not slow(line_with("ledger-db", "812.304 ms"))
    assert slow(line_with("edge-proxy", "rt=2.503"))
    assert not slow(line_with("edge-proxy", "rt=0.012"))
    assert slow(line_with("compute", "Took 2.50 seconds"))
    assert not slow(line_with("compute", "Took 0.55 seconds"))
    # Redis's save schedule says seconds, and is no slow line; nor a checkpoint's write time.
    assert not slow(line_with("session-cache", "3600 seconds"))
    assert not slow(line_with("ledger-db", "checkpoint complete"))


def test_a_postgres_duration_line_is_a_slow_query(vocabulary):
    line = line_with("ledger-db", "2336.512 ms")

    assert has_property("slow_query", level="INFO", message=line, vocabulary=vocabulary)
    assert not has_property(
        "slow_query", level="", message=line_with("edge-proxy", "rt=2.503"), vocabulary=vocabulary
    )


def test_go_durations_and_sqlstate_classes():
    assert go_duration_ms("1m30s") == Decimal("90000")
    assert go_duration_ms("12.4ms") == Decimal("12.4")
    assert go_duration_ms("soon") is None
    assert sqlstate_class("23505") == "23 Integrity Constraint Violation"
    assert sqlstate_class("ZZ001") == "ZZ"
