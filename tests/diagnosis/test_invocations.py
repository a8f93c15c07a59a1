"""Recording tool calls: evidence refs extracted by code, failures recorded, bounded tool messages."""

import json
from datetime import datetime

import pytest

from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.gatekeeper import gatekeep
from diagnosis.services.invocations import storable
from diagnosis.services.sessions import session_start
from tests.factories import DiagnosisSessionFactory
from tests.prometheus_server import FakePrometheus
from tests.tools.support import BrokenLogs, FiveHundredLogs, pin_demo_now, record, use_source
from tools.evidence.alerts.source import AlertSource
from tools.evidence.logs.source import LogSource
from tools.evidence.receipt import output_digest
from tools.evidence.result import MESSAGE_OUTPUT_CHARS, MESSAGE_REFS
from tools.evidence.series.source import SeriesSource
from tools.inventory import SourceInventory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo_now(settings):
    pin_demo_now(settings)


def test_alert_refs_have_the_agreed_text(session):
    invocation = record(session, "query_alerts", service="order-service")

    assert invocation.success is True
    assert invocation.retrieval_details == {
        "evidence_status": "supported",
        "evidence_refs": [
            {
                "raw_path": "$.alerts[0]",
                "text": "HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 91%，"
                "JVM堆内存 3.8GB/4GB，pod pod-order-service-5c7d8e9f1-m3n2p duration=15m",
            }
        ],
    }
    assert invocation.input == {"service": "order-service"}
    assert invocation.output["alerts"][0]["alert_name"] == "HighMemoryUsage"


def test_a_call_by_the_alerts_tools_former_name_is_recorded_under_its_name_now_and_cited_by_either(session):
    invocation = record(session, "query_metrics", service="order-service")
    [ref] = invocation.evidence_refs

    def cited_as(tool_name):
        binding = EvidenceBinding(
            tool_name=tool_name,
            source_invocation_id=invocation.pk,
            raw_path=ref["raw_path"],
            evidence_excerpt=ref["text"],
        )
        claim = Claim(
            claim_id="c1", claim_type="observation", claim_text=ref["text"], evidence_bindings=[binding]
        )
        output = ExecutorOutput(
            claims=[claim],
            hypotheses=[],
            missing_info=[],
            recommended_actions=[],
            diagnosis_summary="",
            user_facing_answer="",
        )
        return gatekeep(executor_output=output, invocations=[invocation.tool_result()])

    assert (invocation.tool_name, invocation.success) == ("query_alerts", True)
    assert ToolInvocation.objects.filter(session=session, tool_name="query_alerts").count() == 1
    assert cited_as("query_metrics").status == cited_as("query_alerts").status == "pass"


def test_log_refs_have_the_agreed_text(session):
    invocation = record(session, "query_logs", query="HikariCP", service="order-service")

    assert invocation.evidence_status == "supported"
    assert invocation.evidence_refs == [
        {
            "raw_path": "$.logs[0]",
            "text": "[2026-11-29 14:52:00][ERROR][order-service] HikariPool-1 - Connection is not available, "
            "request timed out after 30000ms",
        },
        {
            "raw_path": "$.logs[1]",
            "text": "[2026-11-29 14:51:00][WARN][order-service] "
            "HikariCP pool stats: active=50/50, idle=0, waiting=32",
        },
    ]


def test_knowledge_refs_and_retrieval_details(session):
    invocation = record(session, "lookup_knowledge", query="HikariCP 连接池耗尽怎么处理")
    blocks = invocation.output["evidence_blocks"]
    details = invocation.retrieval_details

    assert details["evidence_status"] == "supported"
    assert details["evidence_refs"][0] == {
        "raw_path": "$.evidence_blocks[0]",
        "text": f"{blocks[0]['title']}（{blocks[0]['source_document']}）: {blocks[0]['content']}",
    }
    assert len(details["evidence_refs"]) == 3
    assert details["retrieval_layers"] == ["L0"]
    assert details["relevance_levels"] == list(dict.fromkeys(block["relevance"] for block in blocks))
    assert details["source_documents"] == ["runbooks/hikaricp-connection-pool.md"]
    assert details["evidence_blocks"] == [block["block_id"] for block in blocks]
    assert details["deduped_blocks"] == []


@pytest.mark.parametrize(
    ("tool_name", "arguments", "text"),
    [
        (
            "query_logs",
            {"query": "连接池耗尽", "service": "inventory-service"},
            "在 日志查询（关键词 连接池耗尽，服务 inventory-service，来源 演示数据）中未检索到匹配记录",
        ),
        (
            "query_alerts",
            {"service": "inventory-service"},
            "在 告警查询（服务 inventory-service，来源 演示数据）中未检索到匹配记录",
        ),
        (
            "lookup_knowledge",
            {"query": "如何轮换 quantum scheduler token"},
            "在 处理手册检索（问题 如何轮换 quantum scheduler token，来源 演示数据）中未检索到匹配记录",
        ),
    ],
)
def test_no_hit_is_a_success_with_the_no_evidence_ref(session, tool_name, arguments, text):
    invocation = record(session, tool_name, **arguments)

    assert invocation.success is True
    assert invocation.evidence_status == "no_evidence"
    assert invocation.evidence_refs == [{"raw_path": "$.no_evidence", "text": text}]


def test_knowledge_already_returned_in_the_session_is_not_new_evidence(session):
    first = record(session, "lookup_knowledge", query="HighMemoryUsage")
    again = record(session, "lookup_knowledge", query="HighMemoryUsage")

    assert all(block["deduped"] for block in again.output["evidence_blocks"])
    assert again.evidence_status == "no_evidence"
    assert again.evidence_refs == [
        {
            "raw_path": "$.no_evidence",
            "text": "在 处理手册检索（问题 HighMemoryUsage，来源 演示数据）中未检索到匹配记录"
            "（无新证据：3 个知识块已在本会话中返回过）",
        }
    ]
    assert again.retrieval_details["evidence_blocks"] == []
    assert again.retrieval_details["retrieval_layers"] == []
    assert again.retrieval_details["deduped_blocks"] == first.retrieval_details["evidence_blocks"]


def test_dedup_is_per_session(session):
    record(session, "lookup_knowledge", query="HighMemoryUsage")

    elsewhere = record(DiagnosisSessionFactory(), "lookup_knowledge", query="HighMemoryUsage")

    assert elsewhere.evidence_status == "supported"


def test_current_datetime_is_a_helper_never_evidence(session):
    invocation = record(session, "get_current_datetime")

    assert invocation.success is True
    assert invocation.output == {"now": "2026-11-29 15:00:00", "timezone": "Asia/Shanghai"}
    assert invocation.retrieval_details == {"evidence_status": "not_evidence", "evidence_refs": []}


def test_failing_tool_is_recorded_and_the_caller_goes_on(session, settings):
    use_source(settings, BrokenLogs, LogSource)

    failed = record(session, "query_logs", query="HikariCP")
    after = record(session, "query_alerts", service="order-service")

    assert failed.pk is not None
    assert failed.success is False
    assert failed.error == "ConnectionError: 日志服务连接超时"
    assert failed.output == {"success": False, "error": "ConnectionError: 日志服务连接超时"}
    assert failed.retrieval_details == {"evidence_status": "failed", "evidence_refs": []}
    assert after.success is True


@pytest.mark.parametrize(
    ("tool_name", "arguments", "error_start"),
    [
        ("query_logs", {"query": "CPU", "limit": 500}, "参数无效: limit:"),
        ("query_logs", {"service": "order-service"}, "参数无效: query:"),
        ("query_alerts", {"severity": "critical"}, "参数无效: severity:"),
        ("restart_pod", {"pod": "pod-order-service-5c7d8e9f1-m3n2p"}, "未知工具: restart_pod"),
    ],
)
def test_bad_arguments_and_unknown_tools_are_recorded_as_failed(session, tool_name, arguments, error_start):
    invocation = record(session, tool_name, **arguments)

    assert invocation.success is False
    assert invocation.error.startswith(error_start)
    assert invocation.input == arguments
    assert invocation.evidence_status == "failed"
    assert invocation.evidence_refs == []


def test_failed_knowledge_lookup_has_empty_retrieval_facts(session):
    invocation = record(session, "lookup_knowledge", query="")

    assert invocation.retrieval_details["evidence_status"] == "failed"
    assert invocation.retrieval_details["retrieval_layers"] == []
    assert invocation.retrieval_details["evidence_blocks"] == []


def test_tool_message_carries_what_the_model_cites(session):
    invocation = record(session, "query_logs", query="HikariCP", service="order-service")

    message = invocation.tool_result().message()

    assert message == {
        "invocation_id": invocation.pk,
        "tool_name": "query_logs",
        "source": "demo",
        "success": True,
        "evidence_status": "supported",
        "evidence_refs": invocation.evidence_refs,
        "output": invocation.output,
    }


@pytest.mark.parametrize(
    ("tool_name", "arguments", "error_start"),
    [("query_logs", {"query": "CPU", "limit": 500}, "参数无效"), ("restart_pod", {}, "未知工具")],
)
def test_tool_message_of_a_failure_says_why(session, tool_name, arguments, error_start):
    invocation = record(session, tool_name, **arguments)

    message = invocation.tool_result().message()

    assert message["success"] is False
    assert message["evidence_status"] == "failed"
    assert message["evidence_refs"] == []
    assert message["error"].startswith(error_start)
    assert message["output"] == {"success": False, "error": message["error"]}


def test_tool_message_is_bounded_on_a_large_output(session, settings):
    use_source(settings, FiveHundredLogs, LogSource)
    invocation = record(session, "query_logs", query="异常", limit=100)

    message = invocation.tool_result().message()
    output = message["output"]

    assert len(invocation.output["logs"]) == 100
    assert len(invocation.evidence_refs) == 100
    assert len(json.dumps(output, ensure_ascii=False)) <= MESSAGE_OUTPUT_CHARS
    assert 0 < len(output["logs"]) < 100
    assert output["omitted_records"] == 100 - len(output["logs"])
    assert f"另有 {output['omitted_records']} 条未列出" in output["note"]
    assert output["total"] == 500
    assert output["logs"] == invocation.output["logs"][: len(output["logs"])]
    assert message["evidence_refs"] == invocation.evidence_refs[:MESSAGE_REFS]
    assert message["evidence_refs_omitted"] == 100 - MESSAGE_REFS


HOSTILE_TAIL = " cache miss\x00 then \ud800 half a pair"
HOSTILE_WORLDS = {
    # world: (question, the alert given a 1e308 value, its service)
    "demo": ("order-service 为什么内存使用率高？", "HighMemoryUsage", "order-service"),
    "shop": ("checkout 为什么一直重启？", "KubePodCrashLooping", "checkout"),
}


@pytest.fixture(params=sorted(HOSTILE_WORLDS))
def hostile_world(request, settings):
    """The world's data with one alert valued 1e308 (legal in Prometheus) and a log line of its service
    carrying a NUL and a lone surrogate, served by the fixture source; yields (question, world)."""
    question, alert_name, service = HOSTILE_WORLDS[request.param]
    if request.param == "demo":
        alerts = json.loads((settings.BASE_DIR / "tools/data/demo_world/alerts.json").read_text())
        logs = json.loads((settings.BASE_DIR / "tools/data/demo_world/logs.json").read_text())
        data = {"query_alerts": {"mode": "replace", "records": alerts}, "query_logs": {"records": []}}
        overrides = {}
    else:
        data = world_tools(request.param).source_data()
        logs = data["query_logs"]["records"]
        overrides = {"VOCABULARY_FILE": str(WORLDS_DIR / request.param / "vocabulary.json")}
    for alert in data["query_alerts"]["records"]:
        if alert["alert_name"] == alert_name:
            alert["value"] = "1e308"
    # The service's first log line again, newest, with the hostile tail: what the question finds.
    line = next(log for log in logs if log["service"] == service)
    data["query_logs"]["records"].append(
        {
            "minutes_ago": 0,
            "topic": line["topic"],
            "level": line["level"],
            "service": service,
            "instance": "",
            "message": line["message"] + HOSTILE_TAIL,
            "metrics": {},
        }
    )
    settings.DIAGNOSIS = settings.DIAGNOSIS | overrides | fixture_sources(data, config=settings.DIAGNOSIS)
    return question


@pytest.mark.django_db(transaction=True)
def test_a_huge_sample_and_a_nul_in_a_log_line_end_completed_with_the_text_stored_replaced(hostile_world):
    session = session_start(query=hostile_world, run_inline=True)

    assert session.status == DiagnosisSession.Status.COMPLETED, session.error
    outputs = [json.dumps(i.output, ensure_ascii=False) for i in session.tool_invocations.all()]
    assert not [text for text in outputs if "\x00" in text or "\\u0000" in text]
    logs = [i for i in session.tool_invocations.all() if i.tool_name == "query_logs"]
    assert any(
        "cache miss\ufffd then \ufffd half a pair" in ref["text"] for i in logs for ref in i.evidence_refs
    )
    metrics = [i for i in session.tool_invocations.all() if i.tool_name == "query_alerts"]
    assert any("1e+308" in ref["text"] for i in metrics for ref in i.evidence_refs)


class ExtremePrometheus(AlertSource, SeriesSource):
    """A Prometheus whose one series of the metric `settings.DIAGNOSIS["TEST_SAMPLE"]` names holds the
    sample it names, for any query: what a value ask about that metric reads."""

    def provenance(self) -> tuple[str, str]:
        return "prometheus", "http://prom.test:9090"

    def _sample(self) -> tuple[str, str]:
        from django.conf import settings

        return settings.DIAGNOSIS["TEST_SAMPLE"]

    def inventory(self, *, now) -> SourceInventory:
        return SourceInventory(services={"web"}, metrics={self._sample()[0]})

    def query_alerts(self, *, service, alert_name, now) -> list[dict]:
        return []

    def query_promql(self, *, query: str, minutes: int, now) -> dict:
        metric, value = self._sample()
        series = {"metric": {"__name__": metric, "service": "web"}}
        if minutes:
            return {"result_type": "matrix", "series": [series | {"values": [[now.timestamp(), value]]}]}
        return {"result_type": "vector", "series": [series | {"value": [now.timestamp(), value]}]}


@pytest.mark.parametrize(
    ("metric", "value", "stated"),
    [
        ("node_memory_MemAvailable_bytes", "1e308", "当前值 1e+308 字节（约 1e+299 GB / 9.31323e+298 GiB）"),
        ("disk_used_ratio", "-1e308", "当前值 -1e+308（-1e+310%）"),
        ("disk_used_ratio", "1e-300", "当前值 1e-300（1e-298%）"),
        ("disk_used_ratio", "1e400", "当前值 1e+400（"),
        ("node_memory_MemAvailable_bytes", "+Inf", "当前值 +Inf（"),
    ],
)
def test_a_value_ask_of_any_magnitude_is_answered_with_its_unit(settings, metric, value, stated):
    use_source(settings, ExtremePrometheus, AlertSource, SeriesSource)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"TEST_SAMPLE": (metric, value)}

    session = session_start(query=f"web 的 {metric} 现在是多少？", engine="rules", run_inline=True)

    assert session.status == DiagnosisSession.Status.COMPLETED, session.error
    assert f'{metric}{{service="web"}} {stated}' in session.answer.splitlines()[0]


def test_storable_replaces_nul_and_surrogates_in_keys_and_values_and_keeps_the_rest():
    value = {"a\x00": ["x\udc80y", 1e308, None, {"k": "正常 text"}]}

    assert storable(value) == {"a\ufffd": ["x\ufffdy", 1e308, None, {"k": "正常 text"}]}


# --- Evidence receipts (tools.evidence.receipt), stored with each call ---


def test_every_call_stores_its_receipt_with_the_hash_of_its_output_as_read_back(either_world, session):
    invocation = record(session, "query_alerts")
    invocation.refresh_from_db()

    receipt = invocation.receipt_record
    assert receipt.source == invocation.source == ("demo" if either_world == "demo" else "fixture")
    assert receipt.location == invocation.source_location
    # The world's data is read, not requested over the network.
    assert receipt.requests == []
    assert receipt.evaluated_at == datetime.fromisoformat("2026-11-29T15:00:00+08:00")
    assert invocation.output["alerts"]
    assert receipt.output_sha256 == output_digest(invocation.output)


def test_a_call_to_prometheus_stores_the_request_it_sent_and_no_credential(settings, session):
    password, token = "s3cret-pass", "key-0042"
    with FakePrometheus() as prometheus:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "PROMETHEUS_URL": f"http://viewer:{password}@127.0.0.1:{prometheus.port}",
            "SOURCE_HEADERS": {"prometheus": {"X-Api-Key": token}},
        }
        invocation = record(session, "query_promql", query='up{service="checkout"}', minutes=10)
    invocation.refresh_from_db()

    # The range query, then how far back the server keeps samples (the window's reach is stated).
    request, retention = invocation.receipt_record.requests
    assert (request.source, request.base_url, request.path) == (
        "prometheus",
        f"http://127.0.0.1:{prometheus.port}",
        "/api/v1/query_range",
    )
    assert retention.path == "/api/v1/status/runtimeinfo"
    assert request.query == 'up{service="checkout"}'
    assert request.end == str(datetime.fromisoformat("2026-11-29T15:00:00+08:00").timestamp())
    stored = json.dumps(invocation.receipt)
    assert password not in stored and token not in stored and "viewer" not in stored
    assert invocation.receipt_record.output_sha256 == output_digest(invocation.output)


def test_a_call_that_raised_has_a_receipt_without_a_hash(settings, session):
    use_source(settings, BrokenLogs, LogSource)

    invocation = record(session, "query_logs", query="payment timeout", service="payments")

    assert invocation.success is False
    assert invocation.receipt_record.output_sha256 is None
    assert invocation.receipt_record.source.endswith("BrokenLogs")
