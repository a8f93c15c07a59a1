"""The LLM engine stage by stage, through the real openai SDK over HTTP against the fake server."""

import dataclasses
import json

import pytest

from diagnosis.engines.llm import LLMEngine, LLMUnavailableError
from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import (
    ComposerInput,
    ExecutorInput,
    PlannerInput,
    PlannerOutput,
    VerifierInput,
)
from diagnosis.services.toolbox import RecordingToolbox
from tests.factories import DiagnosisSessionFactory

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
PLAN = {
    "goal": "确认 order-service 是否存在 HighMemoryUsage 告警",
    "steps": [{"tool": "query_metrics", "purpose": "确认告警是否 firing"}],
    "narrow_scope": True,
    "focus": ["order-service", "HighMemoryUsage"],
    "excluded_topics": [],
}
CLAIM = {
    "claim_id": "claim-1",
    "claim_type": "observation",
    "claim_text": "order-service 存在 HighMemoryUsage 告警，当前 91%",
    "evidence_bindings": [
        {
            "tool_name": "query_metrics",
            "source_invocation_id": 7,
            "raw_path": "$.alerts[0]",
            "evidence_excerpt": "HighMemoryUsage firing service=order-service",
        }
    ],
}
VERIFIER_INPUT = VerifierInput(
    original_query=QUERY,
    executor_structured_output={"claims": [CLAIM], "user_facing_answer": "存在该告警"},
    gatekeeper_result={
        "status": "pass",
        "severity": "none",
        "checked_bindings": [
            {"claim_id": "claim-1", "source_invocation_id": 7, "raw_path": "$.alerts[0]", "status": "pass"}
        ],
    },
    tool_trace_summary=[],
    executor_output_parse_status={"status": "valid", "detail": ""},
)
COMPOSER_INPUT = ComposerInput(
    query=QUERY,
    confirmed_findings=[
        {"claim_id": "claim-1", "claim_text": "order-service 存在 HighMemoryUsage 告警", "evidence": []}
    ],
    reasonable_inferences=[],
    gaps=[],
    allowed_actions=[],
)
FINAL_EXECUTOR_REPLY = {
    "answer_version": "executor_evidence_v2",
    "claims": [
        {
            "claim_id": "claim-1",
            "claim_type": "observation",
            "claim_text": "order-service 存在 HighMemoryUsage 告警",
            "evidence_bindings": [
                {
                    "tool_name": "query_metrics",
                    "source_invocation_id": "{{inv:query_metrics}}",
                    "raw_path": "$.alerts[0]",
                    "evidence_excerpt": "{{ref:query_metrics:0:$.alerts[0]}}",
                }
            ],
        }
    ],
    "hypotheses": [],
    "missing_info": [],
    "recommended_actions": [],
    "diagnosis_summary": "告警存在",
    "user_facing_answer": "order-service 存在 HighMemoryUsage 告警",
}


@pytest.fixture
def toolbox(db):
    return RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)


def _executor_input() -> ExecutorInput:
    return ExecutorInput(query=QUERY, plan=PlannerOutput(**PLAN), round=1)


def _assert_strict(schema: dict) -> None:
    """OpenAI strict mode: every object closed and every property required, all the way down."""
    if schema.get("type") == "object" or "properties" in schema:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
    assert "default" not in schema
    for value in schema.values():
        for sub in value.values() if isinstance(value, dict) else value if isinstance(value, list) else []:
            if isinstance(sub, dict):
                _assert_strict(sub)


def _stage_input_seen(request: dict) -> dict:
    prompt = request["messages"][0]["content"]
    return json.loads(prompt[prompt.rindex("<input>") + len("<input>") : prompt.rindex("</input>")])


def test_planner_sends_a_strict_schema_named_planner_output(fake_llm, settings):
    server = fake_llm({"planner": [PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert call.parse_status.status == "valid"
    assert call.prompt_version.startswith("planner-v1+")
    request = server.requests[0]
    assert request["model"] == settings.DIAGNOSIS["LLM_MODEL"]
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "PlannerOutput"
    assert request["response_format"]["json_schema"]["strict"] is True
    _assert_strict(request["response_format"]["json_schema"]["schema"])


def test_every_stage_sends_its_own_strict_schema(fake_llm, toolbox):
    server = fake_llm()
    engine = LLMEngine()

    engine.plan(PlannerInput(query=QUERY, round=1))
    engine.execute(_executor_input(), toolbox)
    engine.verify(VERIFIER_INPUT)
    engine.compose(COMPOSER_INPUT)

    names = [request["response_format"]["json_schema"]["name"] for request in server.requests]
    assert names == ["PlannerOutput", "ExecutorOutput", "ExecutorOutput", "VerifierOutput", "ComposerOutput"]
    for request in server.requests:
        _assert_strict(request["response_format"]["json_schema"]["schema"])


def test_token_usage_and_wait_are_recorded_per_stage(fake_llm):
    server = fake_llm({"planner": [PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    prompt = server.requests[0]["messages"][0]["content"]
    assert call.usage.prompt_tokens == len(prompt) // 4
    assert call.usage.completion_tokens == len(json.dumps(PLAN, ensure_ascii=False)) // 4
    assert call.usage.llm_calls == 1
    assert call.usage.wait_ms > 0


def test_executor_runs_the_models_tool_calls_and_records_each(fake_llm, toolbox):
    server = fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_metrics", "arguments": {"service": "order-service"}}]},
                FINAL_EXECUTOR_REPLY,
            ]
        }
    )

    call = LLMEngine().execute(_executor_input(), toolbox)

    invocation = ToolInvocation.objects.get(session=toolbox.session)
    assert invocation.tool_name == "query_metrics"
    assert invocation.input == {"service": "order-service"}
    first, second = server.requests
    assert {tool["function"]["name"] for tool in first["tools"]} >= {
        "query_metrics",
        "query_logs",
        "lookup_knowledge",
    }
    assert first["response_format"]["json_schema"]["name"] == "ExecutorOutput"
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
    assert json.loads(tool_message["content"])["invocation_id"] == invocation.pk
    binding = call.output.claims[0].evidence_bindings[0]
    assert binding.source_invocation_id == invocation.pk
    assert binding.evidence_excerpt == invocation.evidence_refs[0]["text"]
    assert call.model_output["tool_calls"][0]["invocation_id"] == invocation.pk
    assert call.usage.llm_calls == 2


def test_executor_tool_loop_stops_when_the_toolbox_is_exhausted(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=2)
    greedy_turn = {"tool_calls": [{"name": "query_metrics", "arguments": {}}] * 3}
    server = fake_llm({"executor": [greedy_turn]})

    call = LLMEngine().execute(_executor_input(), toolbox)

    assert ToolInvocation.objects.filter(session=toolbox.session).count() == 2
    executor_requests = server.requests_for("ExecutorOutput")
    assert len(executor_requests) == 2
    refused = json.loads(executor_requests[1]["messages"][-2]["content"])
    assert refused["success"] is False
    assert executor_requests[1]["tool_choice"] == "none"
    assert "工具调用次数已用完" in executor_requests[1]["messages"][-1]["content"]
    assert call.output.claims[0].evidence_bindings[0].source_invocation_id in set(
        ToolInvocation.objects.values_list("pk", flat=True)
    )


@pytest.mark.parametrize("bad_reply", ['{"goal": "确认', {"goal": "只有目标，缺少其他字段"}])
def test_invalid_reply_is_re_asked_once_with_the_error(fake_llm, bad_reply):
    server = fake_llm({"planner": [bad_reply, PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert call.parse_status.status == "repaired"
    assert len(server.requests) == 2
    re_ask = server.requests[1]["messages"]
    assert re_ask[-2]["role"] == "assistant"
    assert re_ask[-1]["role"] == "user"
    assert "PlannerOutput" in re_ask[-1]["content"]
    assert call.parse_status.detail.removeprefix("首次回复无效：") in re_ask[-1]["content"]
    assert call.usage.llm_calls == 2


def test_planner_parse_failure_falls_back_to_a_plan_with_every_evidence_tool(fake_llm):
    fake_llm({"planner": ["不是 JSON", "仍然不是 JSON"]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.parse_status.status == "parse_failed"
    assert [step.tool for step in call.output.steps] == ["query_metrics", "query_logs", "lookup_knowledge"]
    assert call.output.goal == QUERY
    assert call.output.narrow_scope is True


def test_executor_parse_failure_keeps_the_raw_text_and_no_claims(fake_llm, toolbox):
    fake_llm({"executor": ["order-service 好像有告警", "order-service 确实有内存告警"]})

    call = LLMEngine().execute(_executor_input(), toolbox)

    assert call.parse_status.status == "parse_failed"
    assert call.output.claims == []
    assert call.output.user_facing_answer == "order-service 确实有内存告警"


def test_verifier_parse_failure_marks_every_claim_unsupported(fake_llm):
    fake_llm({"verifier": ["{}", '{"claim_checks": "PASS"}']})

    call = LLMEngine().verify(VERIFIER_INPUT)

    assert call.parse_status.status == "parse_failed"
    assert [(c.claim_id, c.verification) for c in call.output.claim_checks] == [("claim-1", "unsupported")]
    assert [f.verification for f in call.output.facts_checked] == ["no_evidence"]


def test_composer_parse_failure_returns_an_empty_answer(fake_llm):
    fake_llm({"composer": ["回答：一切正常", "回答：一切正常"]})

    call = LLMEngine().compose(COMPOSER_INPUT)

    assert call.parse_status.status == "parse_failed"
    assert call.output.answer == ""


@pytest.mark.parametrize(
    ("stage", "stage_input", "fields"),
    [
        ("verify", VERIFIER_INPUT, VerifierInput),
        ("compose", COMPOSER_INPUT, ComposerInput),
    ],
)
def test_stage_sees_exactly_its_declared_input(fake_llm, stage, stage_input, fields):
    server = fake_llm()

    getattr(LLMEngine(), stage)(stage_input)

    seen = _stage_input_seen(server.requests[0])
    assert set(seen) == {field.name for field in dataclasses.fields(fields)}
    assert seen == dataclasses.asdict(stage_input)


def test_http_500_is_retried_by_the_sdk(fake_llm):
    server = fake_llm({"planner": [{"http_status": 500}, PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert len(server.requests) == 2


def test_persistent_http_500_raises_llm_unavailable(fake_llm):
    server = fake_llm({"planner": [{"http_status": 500}, {"http_status": 500}]})

    with pytest.raises(LLMUnavailableError, match=r"planner.*InternalServerError"):
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert len(server.requests) == 2  # the first call plus LLM_MAX_RETRIES=1 retry


def test_timeout_is_retried_then_raises_llm_unavailable(fake_llm, settings):
    server = fake_llm({"planner": [{"delay_s": 2}, {"delay_s": 2}]})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 0.2}

    with pytest.raises(LLMUnavailableError, match="APITimeoutError"):
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert len(server.requests) == 2


def test_missing_api_key_raises_llm_unavailable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    with pytest.raises(LLMUnavailableError, match="OPENAI_API_KEY"):
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))


def test_unresolvable_script_placeholder_fails_loudly(fake_llm):
    fake_llm({"verifier": [{"claim_checks": "{{inv:query_logs:3}}"}]})

    with pytest.raises(LLMUnavailableError, match=r"\{\{inv:query_logs:3\}\}"):
        LLMEngine().verify(VERIFIER_INPUT)
