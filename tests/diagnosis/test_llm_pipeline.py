"""Whole sessions through the LLM engine: the real openai SDK over HTTP against the fake server.

Whatever the model says, the guards decide: fabricated citations are rejected, a lenient verifier
is overridden, broken replies end the session cleanly, and a broken endpoint is answered by the rules
engine.
"""

import json
import re

import pytest

from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.services.sessions import session_start

pytestmark = pytest.mark.django_db

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
CLAIM_TEXT = "order-service 存在 HighMemoryUsage 告警，内存使用率当前 91%"
REAL_BINDING = {
    "tool_name": "query_alerts",
    "source_invocation_id": "{{inv:query_alerts}}",
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "{{ref:query_alerts:0:$.alerts[0]}}",
}
# The real alert text with 91% changed into 97%.
ALTERED_EXCERPT = "HighMemoryUsage firing service=order-service: 内存使用率持续超过85%，当前 97%"
Output = DiagnosisSession.OutputType


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


@pytest.fixture
def one_round(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MAX_ROUNDS": 1}


def run(query: str = QUERY) -> DiagnosisSession:
    return session_start(query=query, engine="llm", run_inline=True)


def executor_turns(claim_text: str = CLAIM_TEXT, **binding_changes) -> list[dict]:
    """A tool turn on the real demo world, then a final answer whose one binding may be tampered with."""
    return [
        {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
        {
            "answer_version": "executor_evidence_v2",
            "claims": [
                {
                    "claim_id": "claim-1",
                    "claim_type": "observation",
                    "claim_text": claim_text,
                    "evidence_bindings": [REAL_BINDING | binding_changes],
                }
            ],
            "hypotheses": [],
            "missing_info": [],
            "recommended_actions": [],
            "diagnosis_summary": "告警存在",
            "user_facing_answer": claim_text,
        },
    ]


def verifier_says(verification: str, fact: str, **claimed) -> dict:
    return {
        "claim_checks": [
            {"claim_id": "claim-1", "verification": verification, "detail": "…", "evidence_refs": []}
        ],
        "facts_checked": [
            {
                "fact": CLAIM_TEXT,
                "is_critical": True,
                "verification": fact,
                "detail": "…",
                "evidence_refs": [],
            }
        ],
        "rationale": "模型的判断",
        "verdict": claimed.get("verdict"),
        "groundedness_score": claimed.get("score"),
    }


def evaluation(session: DiagnosisSession) -> dict:
    return session.self_evaluation["verifier_evaluation"]


def test_honest_run_passes_with_every_stage_on_the_wire(fake_llm):
    server = fake_llm()

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.output_type == Output.NORMAL
    assert session.verdict == "PASS"
    assert "91%" in session.answer
    names = {
        request["response_format"]["json_schema"]["name"]
        for request in server.requests
        if "response_format" in request
    }
    assert names == {"PlannerOutput", "VerifierOutput", "ComposerOutput"}
    executor_requests = server.requests_for("ExecutorOutput")
    assert executor_requests and all(request["tools"] for request in executor_requests)
    assert all("response_format" not in request for request in executor_requests)
    steps = {step.agent: step for step in session.steps.all()}
    for agent in ("planner", "executor", "verifier", "composer"):
        assert re.match(rf"{agent}-v\d+\+", steps[agent].prompt_version)
        assert steps[agent].prompt_tokens > 0
        assert steps[agent].llm_calls >= 1


def test_scripted_citation_of_real_evidence_passes(fake_llm):
    fake_llm({"executor": executor_turns()})

    session = run()

    assert session.output_type == Output.NORMAL
    assert evaluation(session)["gatekeeper_result"]["status"] == "pass"


def verifier_seen(server) -> dict:
    [request] = server.requests_for("VerifierOutput")
    prompt = request["messages"][1]["content"]
    return json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])


def test_the_verifier_sees_each_claim_with_its_verified_excerpt_and_codes_checks(fake_llm, one_round):
    # 97% is in the claim only: the excerpt is the real alert text (91%), so the citation passes.
    server = fake_llm({"executor": executor_turns("order-service 的 HighMemoryUsage 告警当前 97%")})

    session = run()

    [claim] = verifier_seen(server)["claims"]
    [invocation] = session.tool_invocations.filter(tool_name="query_alerts", round=1)[:1]
    [ref] = [r for r in invocation.retrieval_details["evidence_refs"] if r["raw_path"] == "$.alerts[0]"]
    assert claim == {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim": "order-service 的 HighMemoryUsage 告警当前 97%",
        "excerpts": [{"source": f"query_alerts #{invocation.pk} $.alerts[0]", "text": ref["text"]}],
        "facts_in_excerpts": ["order-service", "HighMemoryUsage"],
        "facts_not_in_excerpts": ["97%"],
        "polarity": "consistent",
    }
    # Code's finding is what the verdict is capped with, whatever the model says.
    assert session.verdict == "LOW_CONFID"


def test_a_claim_denying_what_its_excerpt_states_is_rejected_before_any_verifier(fake_llm, one_round):
    server = fake_llm({"executor": executor_turns("order-service 不存在 HighMemoryUsage 告警")})

    session = run()

    assert server.requests_for("VerifierOutput") == []
    assert "evidence.polarity_mismatch" in evaluation(session)["gatekeeper_result"]["failed_rules"]


@pytest.mark.parametrize(
    ("tampering", "rule"),
    [
        ({"evidence_excerpt": ALTERED_EXCERPT}, "evidence.excerpt_mismatch"),
        ({"source_invocation_id": 987654}, "evidence.invocation_ref"),
        ({"tool_name": "query_logs"}, "evidence.tool_name"),
        ({"raw_path": "$.alerts[9]"}, "evidence.raw_path"),
    ],
)
def test_fabricated_citation_is_rejected_with_the_rule_named(fake_llm, tampering, rule):
    claim_text = "order-service 内存使用率当前 97%，已确认内存泄漏"
    server = fake_llm({"executor": executor_turns(claim_text, **tampering)})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.output_type == Output.DEGRADED
    assert session.verdict == "REJECT"
    assert rule in evaluation(session)["gatekeeper_result"]["failed_rules"]
    assert server.requests_for("VerifierOutput") == []  # a rejected citation never reaches the verifier
    assert claim_text not in session.answer
    assert "97%" not in session.answer and "内存泄漏" not in session.answer


def test_retry_round_cites_the_first_rounds_evidence_without_searching_again(fake_llm):
    uncited, cited = executor_turns(), executor_turns()[1]
    uncited[1]["claims"][0]["evidence_bindings"] = []
    server = fake_llm({"executor": [*uncited, cited]})

    session = run()

    assert session.rounds == 2
    assert session.output_type == Output.NORMAL
    # Round two searches nothing again: it cites what round one (the ask's call and the executor's) found.
    assert session.tool_invocations.filter(round=2).count() == 0
    round_two_prompt = server.requests_for("ExecutorOutput")[-1]["messages"][1]["content"]
    assert "补充取证轮（第 2 轮）" in round_two_prompt
    assert evaluation(session)["retry_context"]["round"] == 1


def test_missing_raw_path_is_never_a_pass(fake_llm, one_round):
    fake_llm({"executor": executor_turns(raw_path=None)})

    session = run()

    assert session.verdict == "LOW_CONFID"
    assert session.output_type == Output.LOW_CONFID_WITH_DISCLAIMER
    assert "evidence.missing_raw_path" in evaluation(session)["gatekeeper_result"]["failed_rules"]


def test_verifier_saying_pass_over_a_contradicted_fact_is_overridden(fake_llm):
    fake_llm(
        {
            "executor": executor_turns(),
            "verifier": [verifier_says("contradicted", "contradicted", verdict="PASS", score=1.0)],
        }
    )

    session = run()

    assert session.verdict == "REJECT"
    assert session.groundedness_score == 0.0
    assert session.output_type == Output.DEGRADED
    assert CLAIM_TEXT not in session.answer


def test_verifier_saying_pass_over_a_gatekeeper_failure_is_overridden(fake_llm, one_round):
    fake_llm(
        {
            "executor": executor_turns(raw_path=None),
            "verifier": [verifier_says("direct_observation", "direct_evidence", verdict="PASS", score=1.0)],
        }
    )

    session = run()

    assert evaluation(session)["gatekeeper_result"]["severity"] == "low_confid"
    assert session.verdict == "LOW_CONFID"
    assert session.output_type != Output.NORMAL


def test_executor_malformed_json_twice_is_a_recorded_parse_failure_never_shown(fake_llm, one_round):
    raw_text = "order-service 内存泄漏已确认，请立即扩容"
    # The tool turn, its reminder to call a tool, the final turn and its re-ask.
    fake_llm({"executor": ["{不是 JSON", "{还不是 JSON", "{仍然不是 JSON", raw_text]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.verdict != "PASS"
    assert evaluation(session)["executor_output_parse_status"]["status"] == "parse_failed"
    assert session.steps.get(agent=AgentStep.Agent.EXECUTOR).status == AgentStep.Status.FALLBACK
    assert raw_text not in session.answer and "扩容" not in session.answer


def test_verifier_malformed_json_twice_cannot_pass(fake_llm, one_round):
    fake_llm({"executor": executor_turns(), "verifier": ["PASS", "PASS!"]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.verdict != "PASS"
    assert session.steps.get(agent=AgentStep.Agent.VERIFIER).status == AgentStep.Status.FALLBACK


def test_persistent_http_500_is_answered_by_the_rules_engine_saying_so_first(fake_llm):
    server = fake_llm({"verifier": [{"http_status": 500}, {"http_status": 500}]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    failed = session.steps.get(agent=AgentStep.Agent.VERIFIER, status=AgentStep.Status.FAILED)
    error_id = failed.model_output["error_id"]
    first_line = session.answer.splitlines()[0]
    assert (
        first_line
        == f"模型服务暂时不可用（校验阶段，错误编号 {error_id}）；本次由规则引擎根据已获取的证据作答。"
    )
    assert "InternalServerError" not in session.answer and "scripted failure" not in session.answer
    assert "InternalServerError" in failed.model_output["server_error"]  # for staff, on the step
    assert len(server.requests_for("VerifierOutput")) == 2  # retried by the SDK once
    assert session.verdict == "PASS" and "91%" in session.answer
    record = evaluation(session)
    assert record["engine"] == "rules"
    assert record["engine_fallback"] == {"engine": "llm", "stage": "verifier", "error_id": error_id}
    assert session.engine == "llm"
    assert session.error == ""


def test_the_rules_engine_reuses_the_calls_the_model_made_instead_of_repeating_them(fake_llm):
    fake_llm({"executor": executor_turns(), "verifier": [{"http_status": 500}, {"http_status": 500}]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    calls = [(i.tool_name, json.dumps(i.input, sort_keys=True)) for i in session.tool_invocations.all()]
    assert calls and len(calls) == len(set(calls))
    # Both engines ran: the model's steps up to its failure, then the rules engine's from the planner on.
    versions = list(
        session.steps.filter(agent=AgentStep.Agent.PLANNER).values_list("prompt_version", flat=True)
    )
    assert len(versions) == 2 and versions[0].startswith("planner-v") and versions[1] == "rules-v1"


OUTAGE_QUESTIONS = {
    "demo": (QUERY, "HighMemoryUsage"),
    "shop": ("只确认 checkout 是否存在 KubePodCrashLooping 告警", "KubePodCrashLooping"),
}


def test_a_model_that_times_out_on_every_call_gives_a_completed_rules_engine_answer(
    fake_llm, settings, either_world
):
    query, alert_name = OUTAGE_QUESTIONS[either_world]
    fake_llm(latency_s=1)
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 0.2}

    session = run(query)

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.answer.startswith("模型服务暂时不可用（规划阶段，错误编号 LLM-")
    assert "规则引擎" in session.answer.splitlines()[0]
    assert alert_name in session.answer
    assert session.verdict == "PASS"
    failed = session.steps.get(status=AgentStep.Status.FAILED)
    assert failed.agent == AgentStep.Agent.PLANNER
    assert "APITimeoutError" in failed.model_output["server_error"]
    assert evaluation(session)["engine_fallback"]["stage"] == "planner"


def test_a_spent_model_budget_is_answered_by_the_rules_engine(fake_llm, settings):
    server = fake_llm()
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_SESSION_SECONDS": 0}

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.answer.startswith("模型服务暂时不可用（规划阶段，错误编号 LLM-")
    assert session.verdict == "PASS" and "91%" in session.answer
    assert server.requests == []  # no model call was started past the budget
    failed = session.steps.get(status=AgentStep.Status.FAILED)
    assert "模型时间预算" in failed.model_output["server_error"]


def test_a_rules_engine_that_fails_too_ends_the_session_failed(fake_llm, monkeypatch):
    def broken_verifier(self, stage_input):
        raise RuntimeError("rules verifier exploded")

    monkeypatch.setattr("diagnosis.engines.rules.RulesEngine.verify", broken_verifier)
    fake_llm({"verifier": [{"http_status": 500}, {"http_status": 500}]})

    session = run()

    assert session.status == DiagnosisSession.Status.FAILED
    assert session.output_type == ""
    assert "rules verifier exploded" in session.error
    failed = session.steps.filter(agent=AgentStep.Agent.VERIFIER, status=AgentStep.Status.FAILED)
    assert failed.count() == 2  # the model's, then the rules engine's


def test_http_500_once_is_retried_and_the_session_completes(fake_llm):
    fake_llm({"planner": [{"http_status": 503}]})

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.output_type == Output.NORMAL


def test_composer_timeouts_are_answered_by_the_rules_engine(fake_llm, settings):
    fake_llm({"composer": [{"delay_s": 2}, {"delay_s": 2}]})
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 0.2}

    session = run()

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.answer.startswith("模型服务暂时不可用（撰写阶段")
    assert session.output_type == Output.NORMAL
    step = session.steps.get(agent=AgentStep.Agent.COMPOSER, status=AgentStep.Status.FAILED)
    assert "APITimeoutError" in step.model_output["server_error"]
    assert "APITimeoutError" not in session.answer


def test_composer_answer_with_a_number_not_in_its_material_is_replaced(fake_llm):
    fake_llm({"composer": [{"answer": "order-service 内存使用率已达 97%，堆内存 3.8GB/4GB。"}]})

    session = run()

    assert session.output_type == Output.NORMAL
    assert evaluation(session)["composer_output"]["status"] == "replaced"
    assert "97%" not in session.answer
    assert "91%" in session.answer


CAUSE_QUESTIONS = {
    "demo": ("order-service 为什么频繁 Full GC？", "order-service"),
    "shop": ("checkout 为什么反复重启？", "checkout"),
}
# The same with a topic excluded: the model plans and the executor takes its full path (tools, tool
# messages); a plain cause question is planned by code and only its candidates explained.
MODEL_QUESTIONS = {
    world: (f"{query}不要分析数据库", service) for world, (query, service) in CAUSE_QUESTIONS.items()
}


def test_a_model_plan_without_the_logs_still_gets_the_log_call_and_starts_from_it(
    fake_llm, one_round, either_world
):
    query, service = MODEL_QUESTIONS[either_world]
    metrics_only = {
        "goal": query,
        "steps": [{"tool": "query_alerts", "purpose": "查看告警"}],
        "narrow_scope": False,
        "focus": [service],
        "excluded_topics": [],
    }
    server = fake_llm({"planner": [metrics_only]})

    session = run(query)

    assert session.status == DiagnosisSession.Status.COMPLETED
    logs = session.tool_invocations.get(tool_name="query_logs")
    assert logs.input["service"] == service
    steps = evaluation(session)["planner_output"]["steps"]
    assert [step["tool"] for step in steps] == ["query_alerts", "query_logs"]
    assert steps[1]["purpose"].startswith("代码按所问补充")
    # The executor's first request already carries the logs' result: it starts from it.
    first = server.requests_for("ExecutorOutput")[0]
    user_message = next(m["content"] for m in first["messages"] if m["role"] == "user")
    assert f'"invocation_id": {logs.pk}' in user_message


def test_the_llm_engine_fills_at_least_the_slots_the_rules_engine_fills(fake_llm, one_round, either_world):
    query, _service = CAUSE_QUESTIONS[either_world]
    fake_llm()

    def filled(engine: str) -> list[str]:
        session = session_start(query=query, engine=engine, run_inline=True)
        return [slot["ask"]["kind"] for slot in evaluation(session)["slots"] if slot["filled"]]

    by_rules = filled("rules")
    assert by_rules
    assert set(by_rules) <= set(filled("llm"))


EXISTENCE_QUESTIONS = {
    "demo": ("只确认 order-service 是否存在 HighMemoryUsage 告警", "91%"),
    "shop": ("只确认 checkout 是否存在 KubePodCrashLooping 告警", "checkout"),
}


def test_the_executor_starts_from_what_the_asks_calls_already_answer(fake_llm, one_round, either_world):
    query, fact = EXISTENCE_QUESTIONS[either_world]
    server = fake_llm()

    session = run(query)

    prompt = server.requests_for("ExecutorOutput")[0]["messages"][1]["content"]
    seen = json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])
    filled = [slot for slot in evaluation(session)["slots"] if slot["filled"]]
    assert filled and len(seen["conclusions"]) == len(filled)
    assert seen["conclusions"][0].startswith("结论：" + filled[0]["conclusion"])
    assert fact in seen["conclusions"][0]


def existence_plan(query: str) -> dict:
    """A plan of nothing but the tool the existence ask's calls use."""
    return {
        "goal": query,
        "steps": [{"tool": "query_alerts", "purpose": "确认告警是否 firing"}],
        "narrow_scope": True,
        "focus": [],
        "excluded_topics": [],
    }


def test_a_question_the_asks_calls_settle_costs_one_model_call_and_passes_on_the_slots(
    fake_llm, one_round, either_world
):
    query, fact = EXISTENCE_QUESTIONS[either_world]
    server = fake_llm({"planner": [existence_plan(query)]})

    session = run(query)

    assert session.verdict == "PASS" and session.output_type == Output.NORMAL
    # Only the plan was asked of the model: no claim to restate the slot, none to judge or word.
    assert len(server.requests) == 1 and server.requests_for("PlannerOutput")
    executor = session.steps.get(agent=AgentStep.Agent.EXECUTOR)
    assert executor.thought.startswith("所问均已由代码按已做的调用写出结论") and executor.llm_calls == 0
    filled = [slot for slot in evaluation(session)["slots"] if slot["filled"]]
    assert filled and evaluation(session)["executor_structured_output"]["claims"] == []
    assert session.answer.startswith("结论：" + filled[0]["conclusion"])
    assert fact in session.answer


ACTION_QUESTIONS = {
    "demo": ("帮我重启 order-service", "order-service"),
    "shop": ("帮我重启 checkout", "checkout"),
}


def test_an_action_request_is_answered_by_codes_statement_whatever_the_model_planned(
    fake_llm, one_round, either_world
):
    query, service = ACTION_QUESTIONS[either_world]
    plan = existence_plan(query)
    plan["steps"].append({"tool": "query_logs", "purpose": f"查看 {service} 的日志"})
    server = fake_llm({"planner": [plan]})

    session = run(query)

    assert session.verdict == "PASS"
    # The model's search of the subject is not run: nothing about it may pose as the restart's result.
    assert not server.requests_for("ExecutorOutput")
    assert evaluation(session)["planner_output"]["steps"] == []
    assert not session.tool_invocations.filter(tool_name="query_logs").exists()
    assert session.answer.startswith("结论：本助手只读取") and "「重启」" in session.answer


def test_a_planned_tool_the_asks_calls_did_not_use_is_the_executors_to_call_on_a_broad_question(
    fake_llm, one_round, either_world
):
    query, _fact = EXISTENCE_QUESTIONS[either_world]
    plan = existence_plan(query) | {"narrow_scope": False}
    plan["steps"].append({"tool": "query_logs", "purpose": "查看相关日志"})
    server = fake_llm({"planner": [plan]})

    run(query)

    assert server.requests_for("ExecutorOutput")


def test_a_narrow_question_the_asks_calls_settle_is_not_widened_by_a_planned_tool(
    fake_llm, one_round, either_world
):
    query, fact = EXISTENCE_QUESTIONS[either_world]
    plan = existence_plan(query)
    plan["steps"].append({"tool": "query_logs", "purpose": "查看相关日志"})
    server = fake_llm({"planner": [plan]})

    session = run(query)

    # The plan's search beyond the asks is beyond the narrow question: no executor model, no claim.
    assert not server.requests_for("ExecutorOutput")
    assert session.verdict == "PASS" and fact in session.answer
    executor = session.steps.get(agent=AgentStep.Agent.EXECUTOR)
    assert "窄范围问题，不再按计划扩大取证" in executor.thought


def test_a_cause_is_the_executors_to_reason_about_even_with_every_slot_filled(
    fake_llm, one_round, either_world
):
    query, _service = MODEL_QUESTIONS[either_world]
    server = fake_llm({"planner": [existence_plan(query) | {"narrow_scope": False}]})

    session = run(query)

    assert all(slot["filled"] for slot in evaluation(session)["slots"])
    prompt = server.requests_for("ExecutorOutput")[0]["messages"][1]["content"]
    seen = json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])
    assert any(ask.endswith("的原因") for ask in seen["open_asks"])


def test_a_plain_cause_question_asks_the_model_only_to_explain_its_candidates(
    fake_llm, one_round, either_world
):
    query, _service = CAUSE_QUESTIONS[either_world]
    server = fake_llm()

    session = run(query)

    assert all(slot["filled"] for slot in evaluation(session)["slots"])
    # No model plan, no tool turn, no verifier or composer model: one explanation, judged by code.
    schemas = [r["response_format"]["json_schema"]["name"] for r in server.requests]
    assert schemas == ["CauseOutput"]
    prompt = server.requests[0]["messages"][1]["content"]
    seen = json.loads(prompt[prompt.index("<input>") + len("<input>") : prompt.rindex("</input>")])
    assert seen["candidates"] and "tools" not in server.requests[0]
    rules = session_start(query=query, engine="rules", run_inline=True)
    assert session.verdict == rules.verdict == "PASS"


def test_a_cause_question_the_planner_labels_narrow_still_has_only_its_candidates_explained(
    fake_llm, one_round, either_world
):
    # Measured on a 1.5B planner: "…为什么频繁 Full GC？应该怎么处理" planned as a narrow question. The
    # runbook's steps are code's, the cause its candidates: the question is read by code, not by the label.
    query, service = CAUSE_QUESTIONS[either_world]
    query += "应该怎么处理"
    narrow = {
        "goal": query,
        "steps": [
            {"tool": "query_logs", "purpose": "查看日志"},
            {"tool": "lookup_knowledge", "purpose": "查手册"},
        ],
        "narrow_scope": True,
        "focus": [service],
        "excluded_topics": [],
    }
    server = fake_llm({"planner": [narrow]})

    session = run(query)

    kinds = [slot["ask"]["kind"] for slot in evaluation(session)["slots"] if slot["filled"]]
    assert kinds == ["cause", "runbook"]
    schemas = [r["response_format"]["json_schema"]["name"] for r in server.requests]
    assert "ExecutorOutput" not in schemas and "CauseOutput" in schemas
    rules = session_start(query=query, engine="rules", run_inline=True)
    assert session.verdict == rules.verdict == "PASS"
    assert session.answer.startswith("结论：根因候选：")


NO_CLAIMS = {
    "answer_version": "executor_evidence_v2",
    "claims": [],
    "hypotheses": [],
    "missing_info": [],
    "recommended_actions": [],
    "diagnosis_summary": "",
    "user_facing_answer": "",
}
SEARCH_QUESTIONS = {"demo": ("看看 order-service", "order-service"), "shop": ("看看 checkout", "checkout")}


def test_an_executor_that_states_nothing_still_says_what_it_searched_and_where(
    fake_llm, one_round, either_world
):
    query, service = SEARCH_QUESTIONS[either_world]
    search = {"name": "query_logs", "arguments": {"service": service, "query": "Deadlock"}}
    fake_llm({"executor": [{"tool_calls": [search]}, NO_CLAIMS]})

    session = run(query)

    assert session.verdict == "LOW_CONFID"
    searched = session.tool_invocations.get(tool_name="query_logs", input__query="Deadlock")
    assert searched.evidence_status == "no_evidence"
    gap = searched.evidence_refs[0]["text"]
    assert gap.startswith("在 日志查询（") and "Deadlock" in gap and service in gap and "来源" in gap
    assert gap in evaluation(session)["gaps"]
    assert gap in session.answer.split("当前缺口：")[1]


MADE_UP_NAMES = {
    # (question, the service as the model writes it, as the sources know it, an alert name nobody knows)
    "demo": (QUERY, "OrderService", "order-service", "order-memory-high"),
    "shop": (
        "只确认 checkout 是否存在 KubePodCrashLooping 告警",
        "Checkout",
        "checkout",
        "checkout-restarts",
    ),
}


def test_names_the_model_makes_up_are_resolved_to_known_ones_or_refused_with_the_nearest(
    fake_llm, one_round, either_world
):
    query, written, known, made_up = MADE_UP_NAMES[either_world]
    calls = [
        {"name": "query_alerts", "arguments": {"service": written}},
        {"name": "query_alerts", "arguments": {"alert_name": made_up}},
    ]
    server = fake_llm({"executor": [{"tool_calls": calls}, NO_CLAIMS]})

    session = run(query)

    assert session.status == DiagnosisSession.Status.COMPLETED
    inputs = [invocation.input for invocation in session.tool_invocations.all()]
    assert {"service": known} in inputs
    assert not any(written in value or made_up in value for i in inputs for value in map(str, i.values()))
    executor_step = session.steps.get(agent=AgentStep.Agent.EXECUTOR)
    resolved, refused = executor_step.model_output["tool_calls"]
    invocation = session.tool_invocations.get(pk=resolved["invocation_id"])
    assert invocation.input == {"service": known}
    assert resolved["resolved_names"] == {"service": {"asked": written, "known": known}}
    assert refused["invocation_id"] is None
    # The model is told the nearest known names, and was offered the known ones with the tools.
    second_turn = server.requests_for("ExecutorOutput")[1]
    refusal = next(
        m["content"] for m in second_turn["messages"] if m["role"] == "tool" and made_up in m["content"]
    )
    assert "最接近的已知名称" in refusal
    described = json.dumps(second_turn["tools"], ensure_ascii=False)
    assert "已知：" in described and known in described


COUNT_QUESTIONS = {
    "demo": ("user-service 的慢请求多不多？最慢的一条是哪个", "最慢 5800 ms"),
    "shop": ("checkout 有哪几类错误？", "checkout 的错误日志 2 条"),
}


def test_a_count_of_log_lines_is_the_same_slot_whichever_engine_answers(fake_llm, one_round, either_world):
    query, fact = COUNT_QUESTIONS[either_world]
    fake_llm()

    def counted(engine: str) -> tuple[str, DiagnosisSession]:
        session = session_start(query=query, engine=engine, run_inline=True)
        [slot] = [slot for slot in evaluation(session)["slots"] if slot["ask"]["kind"] == "logs"]
        assert slot["filled"]
        return slot["conclusion"], session

    by_rules, _ = counted("rules")
    by_llm, session = counted("llm")

    assert by_llm == by_rules and fact in by_llm
    assert session.tool_invocations.get(tool_name="count_logs").success
    assert session.verdict == "PASS"


def test_the_model_is_offered_the_count_of_log_lines_beside_the_search(fake_llm, one_round, either_world):
    query, _service = MODEL_QUESTIONS[either_world]
    server = fake_llm()

    run(query)

    offered = {tool["function"]["name"] for tool in server.requests_for("ExecutorOutput")[0]["tools"]}
    assert {"query_logs", "count_logs"} <= offered
