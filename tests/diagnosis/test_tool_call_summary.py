"""tool_trace_summary: concrete facts first, bounded, compacted, gaps kept, evidence tools only."""

import pytest

from diagnosis.services.tool_call_summary import SUMMARY_CHARS, tool_trace_summary_build
from tests.tools.support import BrokenLogs, FiveHundredLogs, pin_demo_now, record, use_source
from tools.evidence.logs.source import LogSource
from tools.evidence.targets.source import TargetSource

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo_now(settings):
    pin_demo_now(settings)


def summary_of(session):
    return tool_trace_summary_build(invocations=session.tool_invocations.all())


def test_memory_incident_keeps_alert_values_trend_ends_and_gc_facts(session):
    metrics = record(session, "query_alerts", service="order-service")
    logs = record(session, "query_logs", query="内存", service="order-service")

    alerts_entry, logs_entry = summary_of(session)

    assert alerts_entry == {
        "trace_ref": "trace-1",
        "tool_name": "query_alerts",
        "source_invocation_ids": [metrics.pk],
        "evidence_level": "direct",
        "output_summary": "metric_evidence: HighMemoryUsage firing service=order-service duration=15m: "
        "内存使用率持续超过85%，当前 91%，JVM堆内存 3.8GB/4GB，pod pod-order-service-5c7d8e9f1-m3n2p",
        "invocation_count": 1,
        "no_hit_invocation_count": 0,
        "failed_invocation_count": 0,
    }
    summary = logs_entry["output_summary"]
    assert logs_entry["source_invocation_ids"] == [logs.pk]
    assert logs_entry["evidence_level"] == "direct"
    assert "[14:59][WARN][order-service] 内存使用率过高: 91.0%, JVM堆内存: 3.8GB/4GB, GC次数: 128" in summary
    assert "同类 5 条，最早 [14:47][WARN][order-service] 内存使用率过高: 86.2%" in summary
    assert "过去10分钟内发生 15 次 Full GC, 平均耗时 850ms" in summary
    assert summary.index("FATAL") < summary.index("内存使用率过高")


def test_every_firing_alert_is_named(session):
    record(session, "query_alerts")

    summary = summary_of(session)[0]["output_summary"]

    for fact in ("HighCPUUsage", "92%", "HighMemoryUsage", "91%", "SlowResponse", "4.2s", "duration=10m"):
        assert fact in summary


def test_slow_requests_keep_both_endpoints(session):
    record(session, "query_logs", query="慢请求", service="user-service")

    summary = summary_of(session)[0]["output_summary"]

    assert "/api/v1/users/profile 响应耗时 4200ms" in summary
    assert "/api/v1/users/orders 响应耗时 4050ms" in summary
    assert (
        "同类 3 条，最早 [14:51][WARN][user-service] 慢请求: GET /api/v1/users/profile 响应耗时 3600ms"
        in (summary)
    )


def test_five_hundred_log_output_gives_a_bounded_summary(session, settings):
    use_source(settings, FiveHundredLogs, LogSource)
    record(session, "query_logs", query="异常", limit=100)
    record(session, "query_logs", query="异常 重试", limit=100)

    (entry,) = summary_of(session)

    assert len(entry["output_summary"]) <= SUMMARY_CHARS
    assert entry["output_summary"].startswith("log_evidence（共 100 条: ERROR 10, WARN 90）: [")
    assert entry["output_summary"].endswith("类日志未列出")
    assert entry["invocation_count"] == 2


def test_repeated_no_hit_synonyms_compact_into_one_gap(session):
    for synonym in ("HikariCP", "连接池耗尽", "active=50/50"):
        record(session, "query_logs", query=synonym, service="inventory-service")

    (entry,) = summary_of(session)

    assert entry["evidence_level"] == "none"
    assert entry["invocation_count"] == 3
    assert entry["no_hit_invocation_count"] == 3
    assert entry["output_summary"].startswith(
        "未命中 3 次: 在 日志查询（关键词 HikariCP，服务 inventory-service，来源 演示数据）中未检索到匹配记录"
    )


def test_a_hit_among_repeats_keeps_the_entry_direct_and_counts_the_misses(session):
    miss = record(session, "query_logs", query="连接池", service="inventory-service")
    hit = record(session, "query_logs", query="HikariCP", service="order-service")

    (entry,) = summary_of(session)

    assert entry["source_invocation_ids"] == [miss.pk, hit.pk]
    assert entry["evidence_level"] == "direct"
    assert entry["no_hit_invocation_count"] == 1
    assert entry["output_summary"].startswith("log_evidence（共 2 条: ERROR 1, WARN 1）: [14:52][ERROR]")
    assert "未命中 1 次" in entry["output_summary"]


def test_failed_calls_stay_as_gaps(session, settings):
    use_source(settings, BrokenLogs, LogSource)
    failed = record(session, "query_logs", query="CPU")
    invalid = record(session, "query_alerts", service=42)

    logs_entry, metrics_entry = summary_of(session)

    assert logs_entry["source_invocation_ids"] == [failed.pk]
    assert logs_entry["evidence_level"] == "none"
    assert logs_entry["failed_invocation_count"] == 1
    assert logs_entry["output_summary"] == "调用失败 1 次: ConnectionError: 日志服务连接超时"
    assert metrics_entry["source_invocation_ids"] == [invalid.pk]
    assert metrics_entry["output_summary"].startswith("调用失败 1 次: 参数无效")


def test_a_call_to_an_unknown_tool_is_kept_as_a_gap(session):
    unknown = record(session, "restart_pod", pod="pod-order-service-5c7d8e9f1-m3n2p")

    (entry,) = summary_of(session)

    assert entry["source_invocation_ids"] == [unknown.pk]
    assert entry["evidence_level"] == "none"
    assert entry["output_summary"] == "调用失败 1 次: 未知工具: restart_pod"


def test_helper_tools_are_left_out(session):
    record(session, "get_current_datetime")
    metrics = record(session, "query_alerts", alert_name="SlowResponse")

    entries = summary_of(session)

    assert [entry["source_invocation_ids"] for entry in entries] == [[metrics.pk]]


def test_knowledge_is_indirect_guidance_and_a_repeat_is_no_new_evidence(session):
    first = record(session, "lookup_knowledge", query="HikariCP")
    again = record(session, "lookup_knowledge", query="HikariCP")

    (entry,) = summary_of(session)

    assert entry["source_invocation_ids"] == [first.pk, again.pk]
    assert entry["evidence_level"] == "indirect"
    assert entry["no_hit_invocation_count"] == 1
    assert entry["output_summary"].startswith(
        "knowledge_guidance（排查参考，非当前事实）: [L0/high] HikariCP 数据库连接池耗尽处置手册 · "
    )
    assert "无新证据" in entry["output_summary"]


def test_only_deduped_knowledge_is_no_evidence(session):
    record(session, "lookup_knowledge", query="HighCPUUsage")
    repeat = record(session, "lookup_knowledge", query="HighCPUUsage", round=2)

    entries = tool_trace_summary_build(invocations=[repeat])

    assert entries[0]["evidence_level"] == "none"


def test_calls_of_different_rounds_or_topics_are_separate_entries(session):
    record(session, "query_logs", query="CPU", service="payment-service")
    record(session, "query_logs", query="Redis", service="payment-service")
    record(session, "query_logs", query="CPU", service="payment-service", round=2)

    entries = summary_of(session)

    assert [entry["trace_ref"] for entry in entries] == ["trace-1", "trace-2", "trace-3"]
    assert [entry["invocation_count"] for entry in entries] == [1, 1, 1]


class DownTarget(TargetSource):
    """One scrape target that is down."""

    def targets(self) -> list[dict]:
        return [{"job": "node", "instance": "web-1:9100", "health": "down", "last_error": "connection refused"}]


def test_a_call_of_another_kind_is_summarised_by_its_records_own_text(session, settings):
    use_source(settings, DownTarget, TargetSource)
    record(session, "query_targets")

    summary = summary_of(session)[0]["output_summary"]

    assert summary == 'job="node" instance="web-1:9100" health=down lastError: connection refused'
