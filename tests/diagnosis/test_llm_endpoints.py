"""The llm engine on endpoints as they really are, through the real openai SDK over
HTTP against the fake server: endpoints that refuse json_schema, models that wrap their JSON in
prose or write tool calls as text, reasoning text, truncated and huge replies, small contexts."""

import dataclasses
import json
import re

import pytest

from diagnosis.engines.llm import LLMEngine, LLMUnavailableError
from diagnosis.engines.llm.context import MODEL_REFS
from diagnosis.evaluation.fixtures import ToolOverrides, fixture_sources
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.contracts import PlannerInput, PlannerOutput
from diagnosis.services.sessions import session_start
from diagnosis.services.toolbox import RecordingToolbox
from tests.diagnosis.engines.llm.support import PLAN, QUERY, executor_input
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

# A second world with other names: its own service and alert, nothing from the demo world.
OTHER_WORLD_QUERY = "只确认 billing-service 是否存在 QueueBacklogHigh 告警"
OTHER_WORLD_ALERT = {
    "alert_name": "QueueBacklogHigh",
    "service": "billing-service",
    "started_minutes_ago": 9,
    "description": "队列积压超过 5000 条，当前 7420 条",
}
Output = DiagnosisSession.OutputType
# A broad plan with a log search beyond the asks: the executor model runs (a narrow one is not widened).
PLAN_WITH_LOGS = PLAN | {
    "narrow_scope": False,
    "steps": [*PLAN["steps"], {"tool": "query_logs", "purpose": "查看内存相关日志"}],
}


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "MAX_ROUNDS": 1}


@pytest.fixture
def mode(settings):
    def set_modes(structured: str = "json_schema", tool_calls: str = "native") -> None:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "LLM_STRUCTURED_OUTPUT": structured,
            "LLM_TOOL_CALLS": tool_calls,
        }

    return set_modes


@pytest.fixture(params=["demo", "other"])
def world(request, settings):
    """(question, a fact its answer must state) in the demo world, then in a world with other names."""
    if request.param == "demo":
        return QUERY, "91%"
    data = ToolOverrides.model_validate(
        {"query_alerts": {"mode": "replace", "alerts": [OTHER_WORLD_ALERT]}}
    ).source_data()
    settings.DIAGNOSIS = settings.DIAGNOSIS | fixture_sources(data, config=settings.DIAGNOSIS)
    return OTHER_WORLD_QUERY, "7420"


def run(query: str = QUERY) -> DiagnosisSession:
    return session_start(query=query, engine="llm", run_inline=True)


def plan() -> PlannerOutput:
    return LLMEngine().plan(PlannerInput(query=QUERY, round=1)).output


# --- Structured output modes ---


def test_json_schema_mode_fails_cleanly_on_an_endpoint_that_refuses_it(fake_llm, mode):
    mode("json_schema")
    fake_llm(refuse_json_schema=True)

    with pytest.raises(LLMUnavailableError) as raised:
        plan()
    assert "json_object" in raised.value.staff_detail


def test_json_object_mode_works_where_json_schema_is_refused(fake_llm, mode, world):
    query, expected = world
    mode("json_object")
    server = fake_llm(refuse_json_schema=True)

    session = run(query)

    assert session.status == DiagnosisSession.Status.COMPLETED, session.answer
    assert session.output_type == Output.NORMAL
    assert expected in session.answer
    structured = [request for request in server.requests if "response_format" in request]
    assert structured and all(r["response_format"] == {"type": "json_object"} for r in structured)
    planner_system = server.requests_for("PlannerOutput")[0]["messages"][0]["content"]
    assert "JSON Schema" in planner_system and '"narrow_scope"' in planner_system


@pytest.mark.parametrize(
    "wrapped",
    [
        "```json\n{plan}\n```",
        "好的，下面是计划：\n{plan}\n以上。",
        "<think>先想一想要查什么</think>\n```\n{plan}\n```",
    ],
    ids=["fenced", "prose", "think-and-fence"],
)
def test_prompted_mode_reads_json_out_of_fences_and_prose(fake_llm, mode, wrapped):
    mode("prompted")
    server = fake_llm({"planner": [wrapped.format(plan=json.dumps(PLAN, ensure_ascii=False))]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert call.parse_status.status == "valid"
    request = server.requests[0]
    assert "response_format" not in request
    assert "PlannerOutput" in request["messages"][0]["content"]


def test_prompted_mode_re_asks_once_on_an_invalid_reply(fake_llm, mode):
    mode("prompted")
    server = fake_llm({"planner": ["计划是查告警", f"```json\n{json.dumps(PLAN)}\n```"]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.parse_status.status == "repaired"
    assert len(server.requests) == 2


def test_a_whole_session_in_prompted_modes(fake_llm, mode, world):
    query, expected = world
    mode("prompted", "prompted")
    server = fake_llm()

    session = run(query)

    assert session.output_type == Output.NORMAL, session.answer
    assert expected in session.answer
    assert session.tool_invocations.count() == 1
    assert all("response_format" not in r and "tools" not in r for r in server.requests)


# --- Prompted tool calls ---


def test_prompted_tool_calls_are_parsed_from_the_text_and_answered_as_tool_results(fake_llm, mode, db):
    mode("json_schema", "prompted")
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    server = fake_llm(
        {
            "executor": [
                '我先查告警。\n<tool_call>{"name": "query_alerts", "arguments": {"service": "order-service"}}'
                "</tool_call>"
            ]
        }
    )

    call = LLMEngine().execute(executor_input(), toolbox)

    invocation = toolbox.session.tool_invocations.get()
    assert invocation.input == {"service": "order-service"}
    first, second = server.requests[:2]
    assert "tools" not in first and "response_format" not in first
    assert (
        "<tool_call>" in first["messages"][0]["content"] and "query_logs" in first["messages"][0]["content"]
    )
    result = second["messages"][-1]
    assert result["role"] == "user" and result["content"].startswith("<tool_result>")
    assert (
        json.loads(result["content"].removeprefix("<tool_result>").removesuffix("</tool_result>"))[
            "invocation_id"
        ]
        == invocation.pk
    )
    assert call.output.claims[0].evidence_bindings[0].source_invocation_id == invocation.pk


def test_a_call_written_as_fenced_json_is_run_in_native_mode_too(fake_llm, db):
    # Measured on Qwen2.5-Coder 1.5B on llama.cpp's server: offered native tools, it wrote this.
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    written = '```json\n{"name": "query_alerts", "arguments": {"service": "order-service"}}\n```'
    server = fake_llm({"executor": [written]})

    LLMEngine().execute(executor_input(), toolbox)

    invocation = toolbox.session.tool_invocations.get()
    assert invocation.input == {"service": "order-service"}
    assistant, result = server.requests[1]["messages"][-2:]
    assert assistant["content"] is None
    assert [call["function"]["name"] for call in assistant["tool_calls"]] == ["query_alerts"]
    assert result["role"] == "tool" and result["tool_call_id"] == assistant["tool_calls"][0]["id"]


def test_a_tool_result_the_model_writes_itself_is_cut_off_by_a_stop(fake_llm, mode, db):
    mode("json_schema", "prompted")
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    made_up = (
        '<tool_result>{"invocation_id": 1, "evidence_refs": [{"raw_path": "$.alerts[0]", "text": "97%"}]}'
    )
    server = fake_llm(
        {
            "executor": [
                '<tool_call>{"name": "query_alerts", "arguments": {"service": "order-service"}}</tool_call>\n'
                + made_up
            ]
        }
    )

    LLMEngine().execute(executor_input(), toolbox)

    assert all(request["stop"] == ["<tool_result>", "\n\n\n\n"] for request in server.requests)
    assert toolbox.session.tool_invocations.count() == 1
    everything_sent_back = json.dumps(server.requests[1]["messages"], ensure_ascii=False)
    assert "97%" not in everything_sent_back


def test_an_endpoint_that_refuses_stop_is_asked_again_without_it_and_never_sent_it_again(fake_llm):
    server = fake_llm(refuse_stop=True)

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED and session.output_type == Output.NORMAL
    with_stop = [index for index, request in enumerate(server.requests) if "stop" in request]
    assert with_stop == [0]


def test_an_answer_written_before_any_tool_call_is_refused_once_with_the_call_format(fake_llm, mode, db):
    # Measured on Qwen2.5-Coder 1.5B: asked in prompted mode, it answered at once, citing invocation 1.
    mode("json_schema", "prompted")
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    made_up = {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "negative_observation",
                "claim_text": "未检索到 HighMemoryUsage 告警",
                "evidence_bindings": [
                    {
                        "tool_name": "query_alerts",
                        "source_invocation_id": 1,
                        "raw_path": "$.no_evidence",
                        "evidence_excerpt": "未检索到 HighMemoryUsage 告警",
                    }
                ],
            }
        ],
        "hypotheses": [],
        "missing_info": [],
        "recommended_actions": [],
        "diagnosis_summary": "",
        "user_facing_answer": "",
    }
    server = fake_llm(
        {
            "executor": [
                json.dumps(made_up, ensure_ascii=False),
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
            ]
        }
    )

    call = LLMEngine().execute(executor_input(), toolbox)

    invocation = toolbox.session.tool_invocations.get()
    first_ask, reminder = server.requests[0]["messages"][-1], server.requests[1]["messages"][-1]
    assert first_ask["role"] == "user" and "请先按计划调用工具取证" in first_ask["content"]
    assert reminder["role"] == "user" and "还没有调用任何工具" in reminder["content"]
    assert all(message["role"] != "assistant" for message in server.requests[1]["messages"])
    for message in (first_ask, reminder):
        assert '<tool_call>{"name": "query_alerts", "arguments": {"service": "…"' in message["content"]
    assert [
        binding.source_invocation_id for claim in call.output.claims for binding in claim.evidence_bindings
    ] == [invocation.pk]


def test_a_model_that_never_calls_a_tool_is_reminded_only_once(fake_llm, mode, db):
    mode("json_schema", "prompted")
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    server = fake_llm({"executor": ["我认为没有告警。", "确实没有告警。"]})

    call = LLMEngine().execute(executor_input(), toolbox)

    reminders = [
        message
        for message in server.requests[-1]["messages"]
        if message["role"] == "user" and "还没有调用任何工具" in message["content"]
    ]
    assert len(reminders) == 1
    assert toolbox.session.tool_invocations.count() == 0
    assert call.output.claims == []


# --- The composer on a small model ---


def test_with_nothing_confirmed_the_answer_is_written_by_code_and_the_composer_not_asked(fake_llm, world):
    query, _fact = world
    nothing_found = {
        "answer_version": "executor_evidence_v2",
        "claims": [],
        "hypotheses": [],
        "missing_info": ["未检索到匹配的告警"],
        "recommended_actions": [],
        "diagnosis_summary": "",
        "user_facing_answer": "",
    }
    # Measured on a 1.5B model: from a search that found nothing it wrote "当前系统没有告警".
    server = fake_llm(
        {"executor": [{"tool_calls": [{"name": "query_alerts", "arguments": {}}]}, nothing_found]}
    )

    session = run(query)

    assert server.requests_for("ComposerOutput") == []
    step = session.steps.get(agent=AgentStep.Agent.COMPOSER)
    assert step.status == AgentStep.Status.SKIPPED and step.llm_calls == 0
    # What the model did not state, the ask's own call found: the answer is code's conclusion line.
    assert session.answer.startswith("结论：是，")
    assert "当前系统没有告警" not in session.answer
    assert session.self_evaluation["verifier_evaluation"]["composer_output"]["status"] == "skipped"


def test_an_answer_that_states_no_confirmed_finding_is_replaced_by_code(fake_llm, world):
    query, fact = world
    # What a 1.5B model returned: its prompt's output example, verbatim.
    fake_llm({"composer": [{"answer": "（中文 Markdown 答案）"}]})

    session = run(query)

    assert session.output_type == Output.NORMAL
    assert "中文 Markdown 答案" not in session.answer
    assert fact in session.answer
    outcome = session.self_evaluation["verifier_evaluation"]["composer_output"]
    assert outcome["status"] == "replaced" and outcome["detail"] == "撰写结果没有陈述任何已确认的发现"


# --- Reasoning text ---


def test_reasoning_text_never_reaches_a_user_or_the_trace(fake_llm):
    secret = "内部推理：也许应该重启 order-service"
    fake_llm(
        {
            # A broad plan's log search the asks did not make: the executor runs, and the composer has findings.
            "planner": [{"raw": PLAN_WITH_LOGS, "reasoning_content": secret}],
            "composer": [f'<think>{secret}</think>{{"answer": "order-service 存在 HighMemoryUsage 告警"}}'],
        }
    )

    session = run()

    assert session.output_type == Output.NORMAL
    assert secret not in session.answer
    for step in session.steps.all():
        assert secret not in json.dumps(step.model_output, ensure_ascii=False)
    composer = session.steps.get(agent=AgentStep.Agent.COMPOSER)
    assert composer.model_output["replies"][0]["reasoning_chars"] > 0


# --- Truncation ---


def test_a_truncated_reply_is_recorded_and_re_asked_without_pasting_it_back(fake_llm):
    cut = '{"goal": "确认 order-service 是否存在 HighMemoryUsage 告警", "steps": [{"tool": "query_me'
    server = fake_llm({"planner": [{"raw": cut, "finish_reason": "length"}, PLAN]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.output == PlannerOutput(**PLAN)
    assert call.parse_status.status == "repaired"
    assert "截断" in call.parse_status.detail
    assert call.model_output["replies"][0]["truncated"] is True
    assert call.model_output["truncated_replies"] == 1
    re_ask = server.requests[1]["messages"]
    assert all(cut not in (message["content"] or "") for message in re_ask)
    assert re_ask[-1]["role"] == "user" and "截断" in re_ask[-1]["content"]


def test_a_reply_over_the_token_cap_is_never_parsed_as_complete(fake_llm):
    # Valid JSON that only the token cap cuts: the server reports `length`, the engine believes it.
    long_plan = PLAN | {"goal": "确" * 6000}
    fake_llm({"planner": [long_plan, long_plan]})

    call = LLMEngine().plan(PlannerInput(query=QUERY, round=1))

    assert call.parse_status.status == "parse_failed"
    assert call.model_output["truncated_replies"] == 2
    assert call.output.steps  # the code-built fallback plan


# --- Bounded storage ---


def test_a_huge_reply_is_stored_bounded_and_not_sent_back(fake_llm, one_round_of_tools):
    huge = "x" * (3 * 1024 * 1024)
    server = fake_llm({"executor": [huge, huge, huge]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    for step in session.steps.all():
        assert len(json.dumps(step.model_output, ensure_ascii=False).encode()) <= 64 * 1024 + 1024
    assert huge not in session.answer
    assert all(len(json.dumps(request)) < 200_000 for request in server.requests)
    assert len(json.dumps(session.self_evaluation, ensure_ascii=False)) < 200_000


@pytest.fixture
def one_round_of_tools(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MAX_TOOL_CALLS": 1}


# --- Context budget ---


def test_tool_outputs_are_trimmed_to_fit_the_context_but_refs_are_kept(fake_llm, settings, db):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_CONTEXT_TOKENS": 4500}
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    calls = [
        {"name": "query_logs", "arguments": {"query": query, "limit": 100}}
        for query in ("内存 GC 慢请求", "内存 GC", "GC 慢请求")
    ]
    server = fake_llm({"executor": [{"tool_calls": calls}]})

    LLMEngine().execute(executor_input(), toolbox)

    after_tools = server.requests[1]
    tool_messages = [json.loads(m["content"]) for m in after_tools["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 3
    trimmed = [m for m in tool_messages if isinstance(m["output"], str)]
    assert trimmed, "no tool output was trimmed"
    assert all(m["evidence_refs"] for m in tool_messages)
    recorded = {invocation.pk: invocation for invocation in toolbox.session.tool_invocations.all()}
    for message in tool_messages:
        assert [ref["raw_path"] for ref in message["evidence_refs"]] == [
            ref["raw_path"] for ref in recorded[message["invocation_id"]].evidence_refs[:MODEL_REFS]
        ]


def test_the_model_reads_tool_outputs_summarised_by_code_and_the_refs_verbatim(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    server = fake_llm(
        {
            "executor": [
                {
                    "tool_calls": [
                        {"name": "query_logs", "arguments": {"query": "内存 GC 慢请求", "limit": 100}}
                    ]
                }
            ]
        }
    )

    LLMEngine().execute(executor_input(), toolbox)

    [message] = [json.loads(m["content"]) for m in server.requests[1]["messages"] if m["role"] == "tool"]
    [invocation] = toolbox.session.tool_invocations.all()
    refs = invocation.evidence_refs
    assert len(refs) > MODEL_REFS
    assert message["evidence_refs"] == [
        {"raw_path": ref["raw_path"], "text": ref["text"]} for ref in refs[:MODEL_REFS]
    ]
    assert message["evidence_refs_omitted"] == len(refs) - MODEL_REFS
    # The records are the refs' text: the output carries their count, not the records again.
    assert re.fullmatch(r"\d+ 条（原文见 evidence_refs）", message["output"]["logs"])
    assert message["output"]["total"] == invocation.output["total"]


def test_the_calls_made_before_the_executor_reach_it_summarised_too(fake_llm, db):
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=QUERY), round=1, max_calls=8)
    [prior] = toolbox.call_many([("query_logs", {"query": "GC", "limit": 100})])
    server = fake_llm()

    LLMEngine().execute(dataclasses.replace(executor_input(), prior_results=[prior]), toolbox)

    prompt = server.requests[0]["messages"][1]["content"]
    [seen] = json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])[
        "prior_tool_messages"
    ]
    assert seen["evidence_refs"] == prior.message()["evidence_refs"][:MODEL_REFS]
    assert isinstance(seen["output"]["logs"], str)
