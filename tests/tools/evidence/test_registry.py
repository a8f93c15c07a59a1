"""The evidence kinds are the one home of each tool's name and meaning."""

from __future__ import annotations

from dataclasses import replace

import pytest

from diagnosis.pipeline.contracts import NO_EVIDENCE_PATH, PlanStep
from tools.evidence.registry import (
    ALERTS,
    KINDS,
    LOGS,
    PLANNABLE_TOOLS,
    SOURCE_KINDS,
    current_name,
    kind_named,
    tool_label,
)
from tools.evidence.tool import all_tools, get_tool


def test_every_registered_tool_takes_its_name_and_record_key_from_its_kind():
    for tool in all_tools():
        assert tool.kind in KINDS
        assert (tool.name, tool.collection_key, tool.is_guidance) == (
            tool.kind.tool,
            tool.kind.collection_key,
            tool.kind.guidance,
        )


def test_every_kind_is_one_registered_tool():
    assert sorted(kind.tool for kind in KINDS) == sorted(tool.name for tool in all_tools())


def test_a_plan_may_name_only_plannable_kinds():
    assert set(PLANNABLE_TOOLS) <= {kind.tool for kind in KINDS}
    with pytest.raises(ValueError):
        PlanStep(tool="get_current_datetime", purpose="x")


def test_a_reference_outside_the_record_list_is_called_by_the_kinds_other_noun():
    assert ALERTS.reference_noun("$.alerts[0]", no_evidence_path=NO_EVIDENCE_PATH) == "告警"
    assert ALERTS.reference_noun(NO_EVIDENCE_PATH, no_evidence_path=NO_EVIDENCE_PATH) == "告警"
    assert ALERTS.reference_noun("$.series[0]", no_evidence_path=NO_EVIDENCE_PATH) == "指标"
    assert LOGS.reference_noun("$.series[0]", no_evidence_path=NO_EVIDENCE_PATH) == "日志"


def test_a_former_name_reads_as_the_current_one(monkeypatch):
    renamed = replace(LOGS, former_names=("search_logs",))
    monkeypatch.setattr("tools.evidence.registry.KINDS", tuple(renamed if k is LOGS else k for k in KINDS))
    monkeypatch.setattr(get_tool("query_logs"), "kind", renamed)
    assert kind_named("search_logs") == renamed
    assert current_name("search_logs") == "query_logs"
    assert get_tool("search_logs").name == "query_logs"


def test_an_unknown_name_belongs_to_no_kind():
    assert kind_named("query_traces") is None
    assert current_name("query_traces") == "query_traces"
    assert tool_label("query_traces") == "query_traces"


def test_a_tool_is_called_by_its_kinds_label_under_its_current_and_former_names():
    assert tool_label("query_logs") == LOGS.label == "日志查询"
    assert tool_label("query_metrics") == tool_label("query_alerts") == ALERTS.label == "告警查询"


def test_each_row_names_the_package_whose_tool_registers_it():
    for kind in KINDS:
        tool = get_tool(kind.tool)
        assert tool.kind is kind
        assert tool.source_kind is kind.source
        assert type(tool).__module__ == kind.tool_module == f"tools.evidence.{kind.package}.tool"


def test_the_sources_are_configured_by_the_kinds_package_names():
    assert {kind.package: kind.source for kind in KINDS if kind.source is not None} == SOURCE_KINDS
    assert set(SOURCE_KINDS) == {
        "alerts",
        "series",
        "targets",
        "logs",
        "log_series",
        "log_patterns",
        "trace_calls",
        "trace_paths",
        "knowledge",
        "metric_catalog",
    }
