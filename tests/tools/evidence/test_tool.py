"""The tools as the model sees them: one name each, as persisted, schemas, no placeholder anywhere."""

import pytest

from diagnosis.services.sessions import MAX_QUERY_CHARS
from tools.evidence.logs.record import LogLine
from tools.evidence.tool import all_tools
from tools.sources.demo import DATA_DIR

PLACEHOLDER = "-".join(("generic", "service"))
TOOLS_DIR = DATA_DIR.parent.parent


def test_the_tools_are_registered_under_their_contract_names():
    assert {tool.name for tool in all_tools()} == {
        "query_alerts",
        "query_promql",
        "query_targets",
        "query_logs",
        "count_logs",
        "query_logql",
        "query_log_patterns",
        "query_trace_calls",
        "query_trace_paths",
        "lookup_knowledge",
        "search_metrics",
        "get_current_datetime",
    }
    assert {tool.name for tool in all_tools() if tool.is_evidence} == {
        "query_alerts",
        "query_promql",
        "query_targets",
        "query_logs",
        "count_logs",
        "query_logql",
        "query_log_patterns",
        "query_trace_calls",
        "query_trace_paths",
        "lookup_knowledge",
    }


def test_only_the_knowledge_lookup_is_guidance_rather_than_current_fact():
    assert {tool.name for tool in all_tools() if tool.is_guidance} == {"lookup_knowledge"}


def test_openai_definitions_carry_the_argument_schemas():
    definitions = {
        tool.openai_tool()["function"]["name"]: tool.openai_tool()["function"] for tool in all_tools()
    }

    # Strict: every argument required, optional ones nullable, nothing else allowed.
    assert all(definition["strict"] is True for definition in definitions.values())
    logs = definitions["query_logs"]["parameters"]
    assert sorted(logs["required"]) == sorted(logs["properties"]) == ["limit", "query", "service", "topic"]
    assert logs["additionalProperties"] is False
    assert {"type": "null"} in logs["properties"]["service"]["anyOf"]
    assert set(definitions["query_alerts"]["parameters"]["properties"]) == {"service", "alert_name"}
    assert definitions["lookup_knowledge"]["parameters"]["properties"]["top_k"]["default"] == 3
    assert definitions["get_current_datetime"]["parameters"]["properties"] == {}


def test_no_placeholder_service_in_the_data_or_the_tools():
    files = [path for path in [*DATA_DIR.rglob("*"), *TOOLS_DIR.rglob("*.py")] if path.is_file()]

    assert len([path for path in files if path.parent == DATA_DIR / "runbooks"]) == 6
    assert not [path for path in files if PLACEHOLDER in path.read_text(encoding="utf-8")]


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["error", "日志", "generic", "service", "order-service 连接池耗尽", "*"])
def test_no_placeholder_service_in_any_answer(run_tool, query):
    logs = run_tool("query_logs", query=query, limit=100).records

    assert PLACEHOLDER not in str([log.stored() for log in logs])
    assert all(log.service != PLACEHOLDER for log in logs)


def test_every_free_text_argument_is_bounded_like_a_question():
    unbounded = {
        f"{tool.name}.{name}": schema
        for tool in all_tools()
        for name, schema in tool.arguments_model.model_json_schema()["properties"].items()
        for text in [*schema.get("anyOf", []), schema]
        if text.get("type") == "string" and "enum" not in text and "const" not in text
        if not 0 < text.get("maxLength", 0) <= MAX_QUERY_CHARS
    }

    assert not unbounded


@pytest.mark.django_db
def test_a_tool_returns_its_kind_s_typed_records_with_the_request_and_what_it_said(run_tool):
    result = run_tool("query_logs", query="order-service", limit=2)

    assert result.success and result.tool_name == "query_logs"
    assert len(result.records) == 2 and all(isinstance(line, LogLine) for line in result.records)
    assert result.request.query == "order-service" and result.total == 10
    assert result.said == "找到 10 条匹配日志，返回 2 条"
    assert not result.truncated
    # The output it stores: the details with the records where the tool put them.
    assert list(result.output()) == ["success", "logs", "total", "message"]
