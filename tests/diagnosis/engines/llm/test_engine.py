"""The LLM engine stage by stage, through the real openai SDK over HTTP against the fake server."""

import dataclasses
import json
import threading
import time

import pytest
from django.db import connection

from diagnosis.engines.llm import LLMEngine, LLMUnavailableError
from diagnosis.engines.llm.context import composer_material_for_model
from diagnosis.engines.llm.engine import EXECUTOR
from diagnosis.models import ToolInvocation
from diagnosis.pipeline.contracts import (
    ClaimUnderCheck,
    ComposerInput,
    PlannerInput,
    PlannerOutput,
    VerifiedExcerpt,
    VerifierInput,
)
from diagnosis.services.toolbox import RecordingToolbox
from tests.diagnosis.engines.llm.support import PLAN, QUERY, executor_input
from tests.factories import DiagnosisSessionFactory
from tools.evidence.tool import all_tools

CLAIM = {
    "claim_id": "claim-1",
    "claim_type": "observation",
    "claim_text": "order-service 存在 HighMemoryUsage 告警，当前 91%",
    "evidence_bindings": [
        {
            "tool_name": "query_alerts",
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
    claims=[
        ClaimUnderCheck(
            claim_id="claim-1",
            claim_type="observation",
            claim=CLAIM["claim_text"],
            excerpts=[
                VerifiedExcerpt(
                    source="query_alerts #7 $.alerts[0]",
                    text="HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 91%",
                )
            ],
            facts_in_excerpts=["order-service", "HighMemoryUsage", "91%"],
            facts_not_in_excerpts=[],
            polarity="consistent",
        )
    ],
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
                    "tool_name": "query_alerts",
                    "source_invocation_id": "{{inv:query_alerts}}",
                    "raw_path": "$.alerts[0]",
                    "evidence_excerpt": "{{ref:query_alerts:0:$.alerts[0]}}",
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


def _assert_strict(schema: dict) -> None:
    """OpenAI strict mode: every object closed and every property required, all the way down."""
    if schema.get("type") == "object" or "properties" in schema:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
    for value in schema.values():
        for sub in value.values() if isinstance(value, dict) else value if isinstance(value, list) else []:
            if isinstance(sub, dict):
                _assert_strict(sub)


def _stage_input_seen(request: dict) -> dict:
    prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])


def test_planner_sends_a_strict_schema_named_planner_output(fake_llm, settings):
    server = fake_llm({"planner": [PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert call.parse_status.status == "valid"
    assert call.prompt_version.startswith("planner-v4+")
    request = server.requests[0]
    assert request["model"] == settings.DIAGNOSIS["LLM_MODEL"]
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "PlannerOutput"
    assert request["response_format"]["json_schema"]["strict"] is True
    _assert_strict(request["response_format"]["json_schema"]["schema"])


def test_rules_go_as_system_and_the_stage_input_as_user(fake_llm):
    server = fake_llm({"planner": [PLAN]})

    LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    system, user = server.requests[0]["messages"]
    assert system["role"] == "system" and "Planner" in system["content"]
    assert "<input>" not in system["content"]
    assert user["role"] == "user"
    assert user["content"].startswith("<input>") and user["content"].endswith("</input>")
    assert _stage_input_seen(server.requests[0])["query"] == QUERY


def test_every_request_carries_system_temperature_and_a_token_cap(fake_llm, toolbox, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TEMPERATURE": 0.3}
    server = fake_llm()
    engine = LLMEngine()

    engine.plan(PlannerInput(query=QUERY, round=1))
    engine.execute(executor_input(), toolbox)
    engine.verify(VERIFIER_INPUT)
    engine.compose(COMPOSER_INPUT)

    assert len(server.requests) >= 5
    for request in server.requests:
        assert request["messages"][0]["role"] == "system"
        assert request["temperature"] == 0.3
        assert 0 < request["max_completion_tokens"] <= 2048


def test_temperature_defaults_to_zero(fake_llm):
    server = fake_llm({"planner": [PLAN]})

    LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert server.requests[0]["temperature"] == 0


def test_structured_turns_send_their_own_strict_schema_and_tool_turns_none(fake_llm, toolbox):
    server = fake_llm()
    engine = LLMEngine()

    engine.plan(PlannerInput(query=QUERY, round=1))
    engine.execute(executor_input(), toolbox)
    engine.verify(VERIFIER_INPUT)
    engine.compose(COMPOSER_INPUT)

    tool_turns = [
        request for request in server.requests if request.get("tool_choice") in ("auto", "required")
    ]
    assert tool_turns
    for request in tool_turns:
        assert "response_format" not in request
        assert all(tool["function"]["strict"] is True for tool in request["tools"])
        for tool in request["tools"]:
            _assert_strict(tool["function"]["parameters"])
    structured = [request for request in server.requests if request not in tool_turns]
    names = [request["response_format"]["json_schema"]["name"] for request in structured]
    assert names == ["PlannerOutput", "VerifierOutput", "ComposerOutput"]
    for request in structured:
        _assert_strict(request["response_format"]["json_schema"]["schema"])


def test_verifier_is_asked_only_for_claim_checks(fake_llm):
    server = fake_llm()

    call = LLMEngine().verify(VERIFIER_INPUT)

    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"claim_checks"}
    check = next(iter(schema["$defs"].values()))
    assert set(check["properties"]) == {"claim_id", "verification", "detail"}
    assert "facts_checked" not in server.requests[0]["messages"][0]["content"]
    assert [check.verification for check in call.output.claim_checks] == ["direct_observation"]


def test_token_usage_and_wait_are_recorded_per_stage(fake_llm):
    server = fake_llm({"planner": [PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    # The fake counts a token per 3 bytes of UTF-8, as Qwen2.5's tokenizer about does on Chinese prompts.
    prompt_bytes = sum(len(message["content"].encode()) for message in server.requests[0]["messages"])
    assert call.usage.prompt_tokens == prompt_bytes // 3
    assert call.usage.completion_tokens == len(json.dumps(PLAN, ensure_ascii=False).encode()) // 3
    assert call.usage.llm_calls == 1
    assert call.usage.wait_ms > 0


def test_executor_runs_the_models_tool_calls_and_records_each(fake_llm, toolbox):
    server = fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
                "我已查到告警，下面给出结论。",
                FINAL_EXECUTOR_REPLY,
            ]
        }
    )

    call = LLMEngine().execute(executor_input(), toolbox)

    invocation = ToolInvocation.objects.get(session=toolbox.session)
    assert invocation.tool_name == "query_alerts"
    assert invocation.input == {"service": "order-service"}
    first, second, final = server.requests
    assert {tool["function"]["name"] for tool in first["tools"]} >= {
        "query_alerts",
        "query_logs",
        "lookup_knowledge",
    }
    assert "response_format" not in first and "response_format" not in second
    assert first["tool_choice"] == "required"  # nothing to cite yet: the first turn must gather
    assert second["tool_choice"] == "auto"
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]
    assert json.loads(tool_message["content"])["invocation_id"] == invocation.pk
    assert final["tool_choice"] == "none"
    assert final["response_format"]["json_schema"]["name"] == "ExecutorOutput"
    binding = call.output.claims[0].evidence_bindings[0]
    assert binding.source_invocation_id == invocation.pk
    assert binding.evidence_excerpt == invocation.evidence_refs[0]["text"]
    assert call.model_output["tool_calls"][0]["invocation_id"] == invocation.pk
    assert call.usage.llm_calls == 3


def test_a_valid_answer_in_a_tool_turn_is_taken_without_another_call(fake_llm, toolbox):
    server = fake_llm(
        {"executor": [{"tool_calls": [{"name": "query_alerts", "arguments": {}}]}, FINAL_EXECUTOR_REPLY]}
    )

    call = LLMEngine().execute(executor_input(), toolbox)

    assert len(server.requests) == 2
    assert call.parse_status.status == "valid"
    assert call.output.claims[0].claim_text == FINAL_EXECUTOR_REPLY["claims"][0]["claim_text"]


def test_executor_tool_loop_stops_when_the_toolbox_is_exhausted(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=2)
    greedy_turn = {
        "tool_calls": [
            {"name": "query_alerts", "arguments": {}},
            {"name": "query_logs", "arguments": {"query": "OOM"}},
            {"name": "query_alerts", "arguments": {"service": "order-service"}},
        ]
    }
    server = fake_llm({"executor": [greedy_turn]})

    call = LLMEngine().execute(executor_input(), toolbox)

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


def test_tool_turns_stop_before_the_executors_prompt_budget_is_passed(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    queries = ("内存", "GC", "慢请求", "连接池", "超时", "OOM", "CPU", "磁盘")

    def calling(query):
        # A tool call while tools may be called; asked for the final answer, the honest one.
        turn = {"tool_calls": [{"name": "query_logs", "arguments": {"query": query, "limit": 100}}]}
        return lambda request: turn if request.get("tool_choice") != "none" else None

    server = fake_llm({"executor": [calling(query) for query in queries]})

    call = LLMEngine().execute(executor_input(), toolbox)

    *tool_turns, final = server.requests_for("ExecutorOutput")
    assert 1 < len(tool_turns) < len(queries)
    assert final["tool_choice"] == "none" and call.output.claims
    # The tool turns stay within the budget, and one more (re-sending all of them, as the final turn
    # does) would have passed it; only the final turn, always asked, may pass it.
    spent = sum(_prompt_tokens(request) for request in tool_turns)
    assert spent == call.usage.prompt_tokens - _prompt_tokens(final)
    assert spent <= EXECUTOR.prompt_tokens < spent + _prompt_tokens(final)


def _prompt_tokens(request: dict) -> int:
    """As the fake server counts them."""
    text = "".join(m.get("content") or "" for m in request["messages"])
    return len((text + json.dumps(request.get("tools") or [], ensure_ascii=False)).encode()) // 3


def test_a_repeated_call_is_not_run_again_and_points_to_the_earlier_result(fake_llm, toolbox):
    same_call = {"name": "query_alerts", "arguments": {"service": "order-service"}}
    server = fake_llm(
        {
            "executor": [
                {"tool_calls": [same_call, same_call]},
                {"tool_calls": [same_call, {"name": "query_logs", "arguments": {"query": "OOM"}}]},
                FINAL_EXECUTOR_REPLY,
            ]
        }
    )

    LLMEngine().execute(executor_input(), toolbox)

    first = ToolInvocation.objects.get(session=toolbox.session, tool_name="query_alerts")
    assert (
        ToolInvocation.objects.filter(session=toolbox.session).count() == 2
    )  # the metrics call once, the logs call
    results = [
        json.loads(message["content"])
        for message in server.requests[2]["messages"]
        if message["role"] == "tool"
    ]
    assert [result.get("invocation_id") for result in results][:1] == [first.pk]
    repeats = [result for result in results if result.get("invocation_id") is None]
    assert len(repeats) == 2
    assert all(f"invocation_id {first.pk}" in result["error"] for result in repeats)


def test_a_call_by_the_alerts_tools_former_name_repeats_the_call_by_its_name_now(fake_llm, toolbox):
    arguments = {"service": "order-service"}
    fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_metrics", "arguments": arguments}]},
                {"tool_calls": [{"name": "query_alerts", "arguments": arguments}]},
                FINAL_EXECUTOR_REPLY,
            ]
        }
    )

    LLMEngine().execute(executor_input(), toolbox)

    calls = ToolInvocation.objects.filter(session=toolbox.session)
    assert list(calls.values_list("tool_name", flat=True)) == ["query_alerts"]


def test_a_repeat_of_a_call_the_budget_refused_gets_the_same_refusal(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=1)
    refused_twice = {"name": "query_logs", "arguments": {"query": "OOM"}}
    server = fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {}}, refused_twice, refused_twice]}
            ]
        }
    )

    LLMEngine().execute(executor_input(), toolbox)

    assert ToolInvocation.objects.filter(session=toolbox.session).count() == 1
    results = [
        json.loads(message["content"])
        for message in server.requests[1]["messages"]
        if message["role"] == "tool"
    ]
    assert results[1] == results[2] and results[1]["success"] is False


def test_a_turn_of_repeats_only_ends_the_tool_turns(fake_llm, toolbox):
    same_call = {"name": "query_alerts", "arguments": {"service": "order-service"}}
    server = fake_llm({"executor": [{"tool_calls": [same_call]}] * 2 + [FINAL_EXECUTOR_REPLY]})

    call = LLMEngine().execute(executor_input(), toolbox)

    assert ToolInvocation.objects.filter(session=toolbox.session).count() == 1
    executor_requests = server.requests_for("ExecutorOutput")
    assert len(executor_requests) == 3  # the call, its repeat, then the final turn
    assert executor_requests[-1]["tool_choice"] == "none"
    assert call.parse_status.status == "valid"


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

    # The question's scope as the round read it (narrow: "只确认 …").
    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1, narrow_scope=True, excluded_topics=["OOM"]))

    assert call.parse_status.status == "parse_failed"
    assert [step.tool for step in call.output.steps] == ["query_alerts", "query_logs", "lookup_knowledge"]
    assert call.output.goal == QUERY
    assert call.output.narrow_scope is True
    assert call.output.excluded_topics == ["OOM"]


def test_executor_parse_failure_keeps_the_raw_text_and_no_claims(fake_llm, toolbox):
    # The tool turn, its one reminder to call a tool, the final turn and its one re-ask: prose every time.
    fake_llm(
        {
            "executor": [
                "order-service 好像有告警",
                "order-service 应该有告警",
                "order-service 有告警",
                "order-service 确实有内存告警",
            ]
        }
    )

    call = LLMEngine().execute(executor_input(), toolbox)

    assert call.parse_status.status == "parse_failed"
    assert call.output.claims == []
    assert call.output.user_facing_answer == "order-service 确实有内存告警"


def test_verifier_parse_failure_marks_every_claim_unsupported(fake_llm):
    fake_llm({"verifier": ["{}", '{"claim_checks": "PASS"}']})

    call = LLMEngine().verify(VERIFIER_INPUT)

    assert call.parse_status.status == "parse_failed"
    assert [(c.claim_id, c.verification) for c in call.output.claim_checks] == [("claim-1", "unsupported")]


def test_composer_parse_failure_returns_an_empty_answer(fake_llm):
    fake_llm({"composer": ["回答：一切正常", "回答：一切正常"]})

    call = LLMEngine().compose(COMPOSER_INPUT)

    assert call.parse_status.status == "parse_failed"
    assert call.output.answer == ""


def test_composer_sees_exactly_its_declared_input(fake_llm):
    server = fake_llm()

    LLMEngine().compose(COMPOSER_INPUT)

    seen = _stage_input_seen(server.requests[0])
    assert set(seen) == {field.name for field in dataclasses.fields(ComposerInput)}
    assert seen == dataclasses.asdict(COMPOSER_INPUT) | {
        "confirmed_findings": [{"claim_text": "order-service 存在 HighMemoryUsage 告警", "evidence": []}]
    }


def test_the_composer_model_reads_an_excerpt_once_and_no_sources():
    quoted = "HighMemoryUsage firing service=order-service"
    material = dataclasses.asdict(COMPOSER_INPUT) | {
        "confirmed_findings": [
            {
                "claim_id": "claim-1",
                "claim_text": f"告警：{quoted}",
                "evidence": [
                    {"excerpt": quoted, "source": "query_alerts #1 $.alerts[0]"},
                    {"excerpt": "当前 91%", "source": "query_logs #2 $.logs[0]"},
                ],
            }
        ]
    }

    seen = composer_material_for_model(material)

    # The excerpt its words already hold is not sent again; where evidence comes from is not prose.
    assert seen["confirmed_findings"] == [{"claim_text": f"告警：{quoted}", "evidence": ["当前 91%"]}]


def test_http_500_is_retried_by_the_sdk(fake_llm):
    server = fake_llm({"planner": [{"http_status": 500}, PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert len(server.requests) == 2


def test_persistent_http_500_raises_llm_unavailable_with_a_stable_message(fake_llm):
    server = fake_llm({"planner": [{"http_status": 500, "message": "/srv/llama/server.cpp:42 boom"}] * 2})

    with pytest.raises(LLMUnavailableError) as raised:
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert len(server.requests) == 2  # the first call plus LLM_MAX_RETRIES=1 retry
    error = raised.value
    assert str(error) == f"模型服务暂时不可用（规划阶段，错误编号 {error.error_id}）"
    assert "/srv/llama" not in str(error)
    assert "InternalServerError" in error.staff_detail and "/srv/llama/server.cpp:42" in error.staff_detail


def test_timeout_is_retried_then_raises_llm_unavailable(fake_llm, settings):
    server = fake_llm({"planner": [{"delay_s": 2}, {"delay_s": 2}]})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 0.2}

    with pytest.raises(LLMUnavailableError) as raised:
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert "APITimeoutError" in raised.value.staff_detail
    assert len(server.requests) == 2


def test_a_spent_session_budget_ends_the_stage_before_calling_the_model(fake_llm, settings):
    server = fake_llm({"planner": [PLAN]})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_SESSION_SECONDS": 0}

    with pytest.raises(LLMUnavailableError) as raised:
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert "预算" in raised.value.staff_detail
    assert server.requests == []


def test_each_call_timeout_is_bounded_by_the_session_budget(fake_llm, settings):
    server = fake_llm({"planner": [{"delay_s": 2}, {"delay_s": 2}]})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 30.0, "LLM_SESSION_SECONDS": 1.5}

    engine = LLMEngine()

    with pytest.raises(LLMUnavailableError):
        engine.plan(PlannerInput(query=QUERY, round=1))
    assert len(server.requests) == 2  # the call and its SDK retry, sharing what was left
    assert time.monotonic() <= engine.deadline + 1.0  # plus the SDK's back-off before its retry (≤ 0.5 s)


def test_missing_api_key_raises_llm_unavailable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    with pytest.raises(LLMUnavailableError) as raised:
        LLMEngine().plan(PlannerInput(query=QUERY, round=1))
    assert "OPENAI_API_KEY" in raised.value.staff_detail


def test_unresolvable_script_placeholder_fails_loudly(fake_llm):
    fake_llm({"verifier": [{"claim_checks": "{{inv:query_logs:3}}"}]})

    with pytest.raises(LLMUnavailableError) as raised:
        LLMEngine().verify(VERIFIER_INPUT)
    assert "{{inv:query_logs:3}}" in raised.value.staff_detail


# --- Concurrent tool calls ---

FOUR_CALLS = [
    {"name": "query_alerts", "arguments": {"service": "order-service"}},
    {"name": "query_logs", "arguments": {"query": "Full GC", "service": "order-service"}},
    {"name": "lookup_knowledge", "arguments": {"query": "内存告警处理"}},
    {"name": "query_alerts", "arguments": {}},
]


@pytest.fixture
def slow_tools(monkeypatch):
    """Every tool takes 0.3 s longer; returns the (start, end, thread) of each run."""
    spans = []
    for tool in all_tools():
        original = type(tool).run

        def run(self, *args, _original=original, **kwargs):
            started = time.monotonic()
            time.sleep(0.3)
            result = _original(self, *args, **kwargs)
            spans.append((started, time.monotonic(), threading.get_ident()))
            return result

        monkeypatch.setattr(type(tool), "run", run)
    return spans


def _database_connections() -> int | None:
    """Open server connections to the test database; None on SQLite, which has no server to ask."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_turns_tool_calls_run_concurrently_and_answer_in_call_order(fake_llm, slow_tools):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    server = fake_llm({"executor": [{"tool_calls": FOUR_CALLS}]})
    connections_before = _database_connections()

    call = LLMEngine().execute(executor_input(), toolbox)

    assert len(slow_tools) == 4
    assert max(start for start, _, _ in slow_tools) < min(end for _, end, _ in slow_tools)  # all overlapped
    assert len({thread for _, _, thread in slow_tools}) == 4
    after_tools = server.requests[1]["messages"]
    ids = [m["tool_call_id"] for m in after_tools if m["role"] == "tool"]
    (asked,) = [m for m in after_tools if m.get("tool_calls")]
    assert ids == [c["id"] for c in asked["tool_calls"]]
    names = [json.loads(m["content"])["tool_name"] for m in after_tools if m["role"] == "tool"]
    assert names == [c["name"] for c in FOUR_CALLS]
    assert [c["turn"] for c in call.model_output["tool_calls"]] == [0, 0, 0, 0]
    assert _database_connections() == connections_before  # every worker thread closed its own


def test_tool_calls_run_one_by_one_on_the_callers_thread_inside_a_transaction(fake_llm, slow_tools, toolbox):
    fake_llm({"executor": [{"tool_calls": FOUR_CALLS}]})

    LLMEngine().execute(executor_input(), toolbox)

    assert {thread for _, _, thread in slow_tools} == {threading.get_ident()}


def test_the_tool_budget_is_checked_up_front_in_call_order(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=2)
    server = fake_llm({"executor": [{"tool_calls": FOUR_CALLS}]})

    LLMEngine().execute(executor_input(), toolbox)

    recorded = list(toolbox.session.tool_invocations.order_by("pk").values_list("tool_name", "input"))
    assert recorded == [(c["name"], c["arguments"]) for c in FOUR_CALLS[:2]]
    results = [json.loads(m["content"]) for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [r["success"] for r in results[2:]] == [False, False]
    assert all("次数已用完" in r["error"] for r in results[2:])
