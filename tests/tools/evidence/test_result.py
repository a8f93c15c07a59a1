"""Typed tool results: each record writes its own ref text and stores back as it was read; a result
read from its row keeps the stored output key for key and hands its records with the refs citing them."""

from datetime import datetime
from decimal import Decimal

from tools.evidence.alerts.record import AlertRecord
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import kind_named
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult, not_run
from tools.evidence.series.record import SeriesRecord
from tools.evidence.targets.record import TargetRecord

T = datetime(2026, 11, 29, 14, 55).timestamp()


def test_each_kind_writes_its_ref_text_from_its_fields():
    alert = AlertRecord(
        alert_name="HighCPU", state="firing", service="web", description="CPU 高", duration="5m", value="0.93"
    )
    line = LogLine(timestamp="2026-11-29 14:55:00", level="ERROR", service="web", message="a: [b] c")
    target = TargetRecord(job="node", instance="web-1:9100", health="down", last_error="refused")
    block = RunbookSection(title="CPU 处理手册", source_document="runbooks/cpu.md", content="1. 看负载")

    assert alert.ref_text() == "HighCPU firing service=web: CPU 高 duration=5m 当前值 0.93"
    assert line.ref_text() == "[2026-11-29 14:55:00][ERROR][web] a: [b] c"
    assert target.ref_text() == 'job="node" instance="web-1:9100" health=down lastError: refused'
    assert block.ref_text() == "CPU 处理手册（runbooks/cpu.md）: 1. 看负载"


def test_a_series_says_its_instant_sample_or_its_range():
    instant = SeriesRecord.model_validate({"metric": {"__name__": "up", "job": "node"}, "value": [T, "1"]})
    ranged = SeriesRecord.model_validate({"metric": {"__name__": "up"}, "values": [[T, "1"], [T + 60, "0"]]})
    empty = SeriesRecord.model_validate({"metric": {"__name__": "up"}, "values": []})

    assert instant.instant and instant.sample() == (T, "1")
    assert instant.ref_text() == 'up{job="node"} 当前值 1（14:55:00）'
    assert ranged.ref_text() == "up 最新值 0（14:56:00），区间最小 0，最大 1"
    assert empty.ref_text() == "up 区间内无采样"


def test_a_record_stores_back_the_keys_it_was_read_from_and_its_sources_own():
    stored = {
        "alert_name": "HighCPU",
        "state": "firing",
        "annotations": {"runbook_url": "x"},
        "silenced": True,
    }

    record = AlertRecord.model_validate(stored)

    assert record.stored() == stored
    assert record.annotations == {"runbook_url": "x"}


def logs_result(**details) -> ToolResult:
    lines = [{"timestamp": "t", "level": "ERROR", "service": "web", "message": f"m{i}"} for i in range(2)]
    return ToolResult.from_stored(
        tool_name="query_logs",
        kind=kind_named("query_logs"),
        invocation_id=7,
        arguments={"query": "error", "service": "web"},
        success=True,
        output={"success": True, "logs": lines, **details},
        retrieval_details={
            "evidence_status": "supported",
            "evidence_refs": [{"raw_path": f"$.logs[{i}]", "text": f"line {i}"} for i in range(2)],
        },
        source="loki",
    )


def test_a_result_read_from_its_row_gives_back_the_stored_output_in_its_order():
    result = logs_result(total=9, message="找到 9 条")

    assert list(result.output()) == ["success", "logs", "total", "message"]
    assert result.output()["logs"][1] == {
        "timestamp": "t",
        "level": "ERROR",
        "service": "web",
        "message": "m1",
    }
    assert [type(record) for record in result.records] == [LogLine, LogLine]
    assert result.request.query == "error"


def test_each_record_comes_with_the_ref_that_cites_it():
    result = logs_result()

    assert [(line.message, ref.path, ref.index) for line, ref in result.cited()] == [
        ("m0", "$.logs[0]", 0),
        ("m1", "$.logs[1]", 1),
    ]
    assert result.no_hit() is None


def test_a_deduped_block_has_no_ref_and_is_not_cited():
    result = ToolResult.from_stored(
        tool_name="lookup_knowledge",
        kind=kind_named("lookup_knowledge"),
        invocation_id=3,
        arguments={"query": "cpu"},
        success=True,
        output={"evidence_blocks": [{"title": "a", "deduped": True}, {"title": "b"}]},
        retrieval_details={
            "evidence_status": "supported",
            "evidence_refs": [{"raw_path": "$.evidence_blocks[1]", "text": "b"}],
        },
    )

    assert [block.title for block, _ in result.cited()] == ["b"]


def test_a_cut_output_says_it_was_truncated_with_its_totals():
    result = logs_result(truncated=True, total_lines=5000, total=5000)

    assert result.truncated and result.totals == {"total_lines": 5000}
    assert result.total == 5000
    assert not logs_result().truncated


def test_a_call_not_run_tells_the_model_why_without_an_output():
    refused = not_run("query_logs", error="本轮工具调用次数已用完")
    unknown = not_run("query_alerts", error="未知的服务", nearest_names=["checkout"])

    assert refused.model_message() == {
        "invocation_id": None,
        "tool_name": "query_logs",
        "success": False,
        "evidence_status": "failed",
        "evidence_refs": [],
        "error": "本轮工具调用次数已用完",
    }
    assert unknown.model_message() == {
        "tool_name": "query_alerts",
        "success": False,
        "error": "未知的服务",
        "nearest_names": ["checkout"],
    }


def test_the_model_reads_the_arguments_and_the_names_resolved_beside_the_message():
    result = logs_result().model_copy(update={"resolved_names": {"service": "web"}})

    message = result.model_message()

    assert message["arguments"] == {"query": "error", "service": "web"}
    assert message["resolved_names"] == {"service": "web"}
    assert message["evidence_refs"] == [{"raw_path": f"$.logs[{i}]", "text": f"line {i}"} for i in range(2)]
    assert NO_EVIDENCE_PATH not in str(message)


def test_a_raw_path_finds_its_record_and_its_ref_and_no_other():
    result = ToolResult.from_stored(
        tool_name="query_promql",
        kind=kind_named("query_promql"),
        invocation_id=7,
        arguments={"query": "up", "minutes": 5},
        success=True,
        output={
            "series": [{"metric": {"__name__": "up"}, "values": [[T, "1"], [T + 60, "0"]]}],
            "message": "1 条",
        },
        retrieval_details={
            "evidence_status": "supported",
            "evidence_refs": [
                {"raw_path": "$.series[0]", "text": "up 最新值 0（14:56:00），区间最小 0，最大 1"}
            ],
        },
    )

    assert result.record_at("$.series[0]").name() == "up"
    assert result.record_at("$.series[1]") is None
    assert result.record_at("$.logs[0]") is None
    assert result.ref_at("$.series[0]").index == 0
    assert result.ref_at("$.series[1]") is None
    assert result.said == "1 条"
    assert result.record_at("$.series[0]").named_values() == {Decimal(0), Decimal(1)}
