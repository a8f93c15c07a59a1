"""Log matching as DEMO_WORLD.md says: service and topic keywords, synonyms, case-insensitive, Chinese
and English; no hit is an empty success, never a placeholder."""

from datetime import timedelta

import pytest
from pydantic import ValidationError

from diagnosis.models import ToolInvocation
from tests.factories import DiagnosisSessionFactory
from tests.tools.support import record, use_source
from tools.bounds import CUT_MARK, stored_bytes
from tools.clock import local_text
from tools.evidence.logs.source import LogSource
from tools.evidence.logs.tool import QueryLogsArguments
from tools.evidence.result import ToolResult

pytestmark = pytest.mark.django_db

HIKARI_LINES = [
    "HikariPool-1 - Connection is not available, request timed out after 30000ms",
    "HikariCP pool stats: active=50/50, idle=0, waiting=32",
]
POOL_SYNONYMS = [
    "HikariCP",
    "HikariPool",
    "connection pool",
    "数据库连接池",
    "连接池耗尽",
    "连接池",
    "active=50/50",
    "waiting",
    "request timed out after 30000ms",
]


def messages(result: ToolResult) -> list[str]:
    return [log.message for log in result.records]


@pytest.mark.parametrize("synonym", POOL_SYNONYMS)
def test_every_connection_pool_synonym_finds_the_order_service_pool_lines(run_tool, synonym):
    assert messages(run_tool("query_logs", query=synonym, service="order-service")) == HIKARI_LINES
    assert messages(run_tool("query_logs", query=f"order-service {synonym}")) == HIKARI_LINES


@pytest.mark.parametrize(
    "query", ["order-service 连接池耗尽", "hikaricp", "CONNECTION POOL", "订单服务 连接池"]
)
def test_what_users_type_about_the_pool_finds_it(run_tool, query):
    assert messages(run_tool("query_logs", query=query)) == HIKARI_LINES


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "连接池耗尽", "service": "inventory-service"},
        {"query": "inventory-service 连接池耗尽"},
        {"query": "HikariCP", "service": "inventory-service", "topic": "application-logs"},
        {"query": "gateway-service connection pool"},
    ],
)
def test_connection_pool_on_a_healthy_service_is_an_empty_success(run_tool, arguments):
    output = run_tool("query_logs", **arguments)

    assert (output.success, output.records, output.total, output.said) == (True, [], 0, "未找到匹配的日志")


@pytest.mark.parametrize(
    ("query", "expected_start"),
    [
        ("CPU", "CPU使用率过高"),
        ("内存使用率", "内存使用率过高"),
        ("memory", "内存使用率过高"),
        ("Full GC", "内存使用率过高"),
        ("慢请求", "慢请求"),
        ("slow", "慢请求"),
        ("响应时间", "慢请求"),
        ("latency", "慢请求"),
        ("P99", "慢请求"),
        ("500", "HTTP 500"),
        ("error", "HTTP 500"),
        ("报错", "HTTP 500"),
        ("redis", "Redis 连接超时"),
        ("MQ", "RabbitMQ 消息积压"),
        ("消息队列", "RabbitMQ 消息积压"),
        ("磁盘", "磁盘使用率过高"),
    ],
)
def test_topic_synonym_groups_match(run_tool, query, expected_start):
    output = run_tool("query_logs", query=query, limit=100)

    assert any(message.startswith(expected_start) for message in messages(output))


@pytest.mark.parametrize("query", ["OOM", "oom", "内存溢出"])
def test_oom_finds_the_error_the_restart_and_the_kernel_kill(run_tool, query):
    found = messages(run_tool("query_logs", query=query))

    assert len(found) == 3
    assert any("OutOfMemoryError" in message for message in found)
    assert any("OOMKilled" in message for message in found)
    assert any("OOM Killer" in message for message in found)


def test_a_keyword_only_matches_its_own_group(run_tool):
    found = messages(run_tool("query_logs", query="CPU", limit=100))

    assert found
    assert all("CPU" in message for message in found)


def test_a_service_in_the_query_narrows_like_the_filter(run_tool):
    output = run_tool("query_logs", query="user-service 500")

    assert {log.service for log in output.records} == {"user-service"}


@pytest.mark.parametrize(
    "query", ["如何轮换 quantum scheduler token", "今天天气怎么样", "foo-service 连接池耗尽", "看看日志"]
)
def test_an_unrelated_query_finds_nothing(run_tool, query):
    assert run_tool("query_logs", query=query).records == []


def test_a_literal_identifier_is_found(run_tool):
    assert messages(run_tool("query_logs", query="idx_user_id")) == [
        "慢查询: SELECT * FROM orders WHERE user_id = ? ORDER BY created_at DESC, 耗时 3.2s, "
        "扫描行数 1,245,678, 使用索引 idx_user_id"
    ]


def test_topic_filter_narrows_to_its_category(run_tool):
    output = run_tool("query_logs", query="order-service", topic="system-events")

    assert [log.topic for log in output.records] == ["system-events"]
    assert "OOMKilled" in output.records[0].message


def test_limit_bounds_the_list_and_total_counts_all(run_tool):
    output = run_tool("query_logs", query="order-service", limit=2)

    assert len(output.records) == 2
    assert output.total == 10
    assert output.said == "找到 10 条匹配日志，返回 2 条"
    assert output.request.query == "order-service"


def test_arguments_default_and_bounds():
    assert QueryLogsArguments(query="CPU").limit == 20
    for bad in ({"query": "CPU", "limit": 101}, {"query": "CPU", "topic": "kernel"}, {"query": ""}, {}):
        with pytest.raises(ValidationError):
            QueryLogsArguments.model_validate(bad)


def test_arguments_schema_offers_the_four_topics():
    schema = QueryLogsArguments.model_json_schema()
    topic_enum = next(option["enum"] for option in schema["properties"]["topic"]["anyOf"] if "enum" in option)

    assert topic_enum == ["system-metrics", "application-logs", "database-slow-query", "system-events"]
    assert schema["properties"]["limit"]["maximum"] == 100


class MegabyteLines(LogSource):
    """A log store whose every line is 64 KB of stack trace."""

    def query_logs(self, *, now, **_: object) -> list[dict]:
        return [
            {
                "timestamp": local_text(now - timedelta(seconds=index)),
                "level": "ERROR",
                "service": "order-service",
                "instance": "",
                "topic": "application-logs",
                "message": f"OutOfMemoryError #{index} " + "at com.example.Batch.run(Batch.java:42) " * 1600,
                "metrics": {},
            }
            for index in range(100)
        ]


def test_a_cut_result_is_typed_and_says_its_totals(settings, run_tool):
    use_source(settings, MegabyteLines, LogSource)

    result = run_tool("query_logs", query="OutOfMemoryError", limit=100)

    assert result.truncated and result.totals == {"total_lines": 100}
    assert 0 < len(result.records) < 100
    assert result.records[0].message.endswith(CUT_MARK)
    assert stored_bytes(result.output()) <= settings.DIAGNOSIS["OUTPUT_MAX_BYTES"]


def test_lines_beyond_the_bytes_are_cut_stored_with_the_totals_and_only_the_kept_ones_cited(settings):
    use_source(settings, MegabyteLines, LogSource)

    invocation = record(DiagnosisSessionFactory(), "query_logs", query="OutOfMemoryError", limit=100)

    output = ToolInvocation.objects.get(pk=invocation.pk).output
    assert stored_bytes(output) <= settings.DIAGNOSIS["OUTPUT_MAX_BYTES"]
    assert (output["truncated"], output["total_lines"], output["total"]) == (True, 100, 100)
    kept = len(output["logs"])
    assert 0 < kept < 100
    assert output["logs"][0]["message"].startswith("OutOfMemoryError #0 ")
    assert output["logs"][0]["message"].endswith(CUT_MARK)
    assert [ref["raw_path"] for ref in invocation.evidence_refs] == [f"$.logs[{i}]" for i in range(kept)]
