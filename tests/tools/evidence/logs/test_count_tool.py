"""`count_logs` on the demo world (every line of the window counted in code), on an evaluation case's
own lines, and on a team's log source that cannot count (the lines it serves, said as a sample)."""

import json
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.factories import DiagnosisSessionFactory
from tests.tools.support import record, use_source
from tools.evidence.logs.record import LogCount
from tools.evidence.logs.source import LogSource
from tools.logformats import fields_of

pytestmark = pytest.mark.django_db
DEMO_LOGS = json.loads(
    (Path(__file__).parents[4] / "tools" / "data" / "demo_world" / "logs.json").read_text()
)


def demo_lines(service: str = "", *, minutes: int = 60) -> list[dict]:
    return [r for r in DEMO_LOGS if (not service or r["service"] == service) and r["minutes_ago"] <= minutes]


def test_slow_lines_are_those_that_took_longer_than_the_threshold_with_the_slowest(run_tool):
    result = run_tool("count_logs", measure="slow", service="user-service")

    [count] = result.records
    took = {r["message"]: fields_of(r["message"]).duration_ms for r in demo_lines("user-service")}
    slow = {message: ms for message, ms in took.items() if ms is not None and ms > 1000}
    assert isinstance(count, LogCount)
    assert count.count == len(slow) == 8
    assert Decimal(count.slowest_ms) == max(slow.values()) == Decimal(5800)
    assert count.line == max(slow, key=slow.get)
    assert count.counted_over == "window" and count.query == ""
    assert count.ref_text().startswith(
        "[最近 60 分钟][user-service] 耗时超过 1000 ms 的日志：8 条，最慢 5800 ms"
    )


def test_a_timeout_a_line_waited_for_is_not_a_duration_it_took(run_tool):
    result = run_tool("count_logs", measure="slow", service="order-service")

    # "request timed out after 30000ms" and "平均耗时 850ms": neither took longer than a second.
    assert result.records == []
    assert result.said == "最近 60 分钟没有可统计的日志"


def test_error_lines_are_counted_by_class_a_java_exception_by_its_class_others_by_template(run_tool):
    total, *classes = run_tool("count_logs", measure="class").records

    errors = [r for r in demo_lines() if r["level"] in ("ERROR", "FATAL")]
    assert total.count == len(errors)
    named = {c.group["class"]: c.count for c in classes}
    assert named["java.lang.OutOfMemoryError"] == 1
    assert sum(count for name, count in named.items()) == total.count
    # The three user-service 500s name their exception; the line quoted is the newest of its class.
    [query_timeouts] = [c for c in classes if "QueryTimeoutException" in c.line]
    assert query_timeouts.count == 3 and "5200ms" in query_timeouts.line


def test_a_window_shorter_than_the_lines_counts_only_its_own(run_tool):
    [count] = run_tool("count_logs", measure="slow", service="user-service", minutes=4).records

    assert (
        count.count == len([r for r in demo_lines("user-service", minutes=4) if "耗时" in r["message"]]) == 4
    )
    assert count.minutes == 4


def test_a_case_s_own_access_lines_are_counted_by_path(settings, run_tool):
    line = '10.0.0.{n} - - [29/Nov/2026:14:5{n}:00 +0800] "GET {path} HTTP/1.1" {status} 153 "-" "curl/8.5.0"'
    records = [
        {
            "minutes_ago": n,
            "topic": "application-logs",
            "level": "INFO",
            "service": "gateway-service",
            "instance": "gw-1",
            "message": line.format(n=n, path=path, status=status),
        }
        for n, path, status in [
            (1, "/a", 404),
            (2, "/b", 404),
            (3, "/a", 404),
            (4, "/a", 200),
            (5, "/c", 500),
        ]
    ]
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "SOURCE_CLASSES": {"logs": "tools.sources.fixture.FixtureSource"},
        "FIXTURE_TOOL_DATA": {"query_logs": {"mode": "merge", "records": records}},
    }

    total, *paths = run_tool("count_logs", measure="path", status="404", service="gateway-service").records
    statuses = run_tool("count_logs", measure="status", service="gateway-service").records

    assert total.count == 3
    assert [(p.group["path"], p.count) for p in paths] == [("/a", 2), ("/b", 1)]
    assert [(s.group.get("status"), s.count) for s in statuses] == [
        (None, 5),
        ("404", 3),
        ("200", 1),
        ("500", 1),
    ]


class ServedOnly(LogSource):
    """A team's log source with no count of its own."""

    def query_logs(self, *, query, service, topic, now):
        return [
            {
                "message": "2026-11-29 14:59:00.000 UTC [7] app@db 00000 LOG:  duration: 1500.5 ms  statement: SELECT 1",
                "level": "INFO",
            },
            {
                "message": "2026-11-29 14:58:00.000 UTC [7] app@db 00000 LOG:  duration: 99.5 ms  statement: SELECT 2",
                "level": "INFO",
            },
        ]


def test_a_source_that_cannot_count_has_the_lines_it_serves_counted_and_said_as_a_sample(settings):
    use_source(settings, ServedOnly, LogSource)

    invocation = record(DiagnosisSessionFactory(), "count_logs", measure="slow", service="db")

    [count] = invocation.output["counts"]
    assert (count["count"], count["slowest_ms"], count["counted_over"]) == (1, "1500.5", "sample:2")
    assert "（按最新 2 条日志统计）" in invocation.evidence_refs[0]["text"]


@pytest.mark.parametrize(
    "arguments",
    [{"measure": "fastest"}, {"measure": "path", "status": "4040"}, {"measure": "slow", "slower_than_ms": 0}],
)
def test_bad_arguments_are_refused(run_tool, arguments):
    with pytest.raises(ValidationError):
        run_tool("count_logs", **arguments)
