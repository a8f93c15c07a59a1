"""The fixture source: a case's own tool data served through the real tools and recorder."""

import pytest

from diagnosis.evaluation.fixtures import ToolOverrides, fixture_sources
from diagnosis.services.invocations import invocation_record
from tests.factories import CaseLibraryFactory, DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

INVENTORY_POOL_LOG = {
    "minutes_ago": 4,
    "topic": "application-logs",
    "level": "ERROR",
    "service": "inventory-service",
    "instance": "pod-inventory-service-1",
    "message": "HikariPool-2 - Connection is not available, request timed out after 30000ms",
}
DISK_ALERT = {
    "alert_name": "HighDiskUsage",
    "service": "inventory-service",
    "started_minutes_ago": 12,
    "description": "磁盘使用率持续超过85%，当前 93%",
}
QUANTUM_BLOCK = {
    "block_id": "quantum#1",
    "title": "quantum scheduler token 轮换",
    "content": "先在密钥库生成新 token，再滚动更新调度器。",
    "exact_terms": ["quantum scheduler"],
}


@pytest.fixture
def serve(settings):
    """Plug the fixture source in for the tools a case overrides, with the demo clock pinned."""

    def plug(overrides: dict) -> None:
        data = ToolOverrides.model_validate(overrides).source_data()
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "DEMO_NOW": "2026-11-29T15:00:00+08:00",
            **fixture_sources(data, config=settings.DIAGNOSIS),
        }

    return plug


def call(tool_name: str, **arguments):
    return invocation_record(
        session=DiagnosisSessionFactory(), round=1, tool_name=tool_name, arguments=arguments
    )


def test_merged_logs_are_matched_like_the_demo_worlds_own(serve):
    serve({"query_logs": {"logs": [INVENTORY_POOL_LOG]}})

    hit = call("query_logs", query="HikariCP 连接池耗尽", service="inventory-service")
    miss = call("query_logs", query="慢请求", service="inventory-service")

    assert hit.evidence_refs == [
        {
            "raw_path": "$.logs[0]",
            "text": "[2026-11-29 14:56:00][ERROR][inventory-service] "
            "HikariPool-2 - Connection is not available, request timed out after 30000ms",
        }
    ]
    assert miss.evidence_status == "no_evidence"


def test_merged_logs_keep_the_demo_world_newest_first(serve):
    serve({"query_logs": {"logs": [INVENTORY_POOL_LOG | {"service": "order-service", "minutes_ago": 7}]}})

    logs = call("query_logs", query="HikariCP", service="order-service").output["logs"]

    assert [log["timestamp"] for log in logs] == sorted((log["timestamp"] for log in logs), reverse=True)
    assert "HikariPool-2 - Connection is not available, request timed out after 30000ms" in [
        log["message"] for log in logs
    ]
    assert len(logs) == 3  # the demo world's two connection-pool lines and the case's


def test_replaced_alerts_hide_the_demo_world(serve):
    serve({"query_alerts": {"mode": "replace", "alerts": [DISK_ALERT]}})

    everything = call("query_alerts").output["alerts"]

    assert [alert["alert_name"] for alert in everything] == ["HighDiskUsage"]
    assert everything[0]["duration"] == "12m"
    assert call("query_alerts", service="payment-service").evidence_status == "no_evidence"


def test_merged_alerts_come_after_the_demo_worlds(serve):
    serve({"query_alerts": {"alerts": [DISK_ALERT]}})

    names = [alert["alert_name"] for alert in call("query_alerts").output["alerts"]]

    assert names == ["HighCPUUsage", "HighMemoryUsage", "SlowResponse", "HighDiskUsage"]


def test_a_tool_forced_to_fail_is_recorded_as_a_failed_call(serve):
    serve({"query_logs": {"error": "日志服务连接超时"}})

    invocation = call("query_logs", query="HikariCP")

    assert invocation.success is False
    assert invocation.evidence_status == "failed"
    assert "日志服务连接超时" in invocation.error


def test_a_recorded_call_is_answered_exactly_and_others_get_nothing(serve):
    recorded = {
        "timestamp": "2026-01-02 03:04:05",
        "level": "WARN",
        "service": "x-service",
        "message": "原样返回",
    }
    serve(
        {
            "query_logs": {
                "mode": "replace",
                "responses": [{"arguments": {"query": "q"}, "records": [recorded]}],
            }
        }
    )

    answered = call("query_logs", query="q")
    other = call("query_logs", query="q", service="x-service")

    assert answered.evidence_refs[0]["text"] == "[2026-01-02 03:04:05][WARN][x-service] 原样返回"
    assert other.evidence_status == "no_evidence"


def test_a_recorded_failure_fails_again(serve):
    serve({"query_alerts": {"mode": "replace", "responses": [{"arguments": {}, "error": "Prometheus 超时"}]}})

    assert call("query_alerts").success is False
    assert "Prometheus 超时" in call("query_alerts").error


def test_case_knowledge_blocks_are_searchable(serve):
    serve({"lookup_knowledge": {"mode": "replace", "blocks": [QUANTUM_BLOCK]}})

    found = call("lookup_knowledge", query="如何轮换 quantum scheduler token")
    runbook = call("lookup_knowledge", query="HikariCP 连接池耗尽怎么处理")

    assert found.retrieval_details["evidence_blocks"] == ["quantum#1"]
    assert found.retrieval_details["retrieval_layers"] == ["L0"]
    assert runbook.evidence_status == "no_evidence"


def test_replaced_knowledge_leaves_out_the_case_library(serve):
    CaseLibraryFactory(title="quantum scheduler token 过期", error_code="QuantumTokenExpired")
    serve({"lookup_knowledge": {"mode": "replace", "blocks": [QUANTUM_BLOCK]}})

    invocation = call("lookup_knowledge", query="QuantumTokenExpired quantum scheduler token")

    assert invocation.retrieval_details["evidence_blocks"] == ["quantum#1"]


def test_merged_knowledge_keeps_the_case_library(serve):
    case = CaseLibraryFactory(title="quantum scheduler token 过期", error_code="QuantumTokenExpired")
    serve({"lookup_knowledge": {"blocks": [QUANTUM_BLOCK]}})

    invocation = call("lookup_knowledge", query="QuantumTokenExpired quantum scheduler token")

    assert set(invocation.retrieval_details["evidence_blocks"]) == {"quantum#1", f"case:{case.case_id}"}
