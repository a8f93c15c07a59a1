"""The llm engine explains the investigation's ranked candidates and may not add one (§23), through the
real openai SDK against the local fake server, on the demo world and the shop world: on the cause path
the model explains them by number and code cites for it."""

import dataclasses
import json

import pytest

from diagnosis.engines.llm import LLMEngine
from diagnosis.engines.llm.context import estimated_tokens
from diagnosis.pipeline.candidates import CANDIDATE_RULE
from diagnosis.pipeline.contracts import ExecutorInput, PlannerOutput
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import investigated
from diagnosis.services.sessions import session_start
from diagnosis.services.toolbox import RecordingToolbox
from tests.diagnosis.pipeline.investigation.test_investigate import WORLDS, recorded
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

# A cause question per world, its subject, and a cause no evidence shows.
CAUSES = {
    "demo": ("order-service 为什么频繁 Full GC？", "order-service", "数据库连接池耗尽"),
    "shop": ("checkout 为什么反复重启？", "checkout", "磁盘写满"),
}


def _executor_input(server) -> dict:
    """The stage input of the executor's first request (the one that carries its candidates)."""
    for request in server.requests:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        if "<input>" not in user:
            continue
        seen = json.loads(user[user.index("<input>") + len("<input>") : user.rindex("</input>")])
        if "candidates" in seen:
            return seen
    raise AssertionError("no executor request")


def _first_round(session) -> dict:
    """The first round's record (a second round, if any, runs without the script)."""
    record = session.self_evaluation["verifier_evaluation"]
    return (record["rounds"] or [record])[0]


def _explained(number: int, text: str, *, next_checks: tuple[str, ...] = ()) -> dict:
    return {"explanations": [{"candidate": number, "text": text}], "next_checks": list(next_checks)}


def test_the_ranked_candidates_reach_the_model_numbered_with_their_words_and_numbers(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    server = fake_llm()

    session = session_start(query=question, engine="llm", run_inline=True)

    # The cause path: one request, the candidates and the question only (no tools, no tool messages).
    [request] = server.requests_for("cause")
    assert "tools" not in request
    seen = _executor_input(server)
    assert set(seen) == {"query", "candidates"}
    [slot] = [s for s in _first_round(session)["slots"] if s["candidates"]]
    assert [c["candidate"] for c in seen["candidates"]] == list(range(1, len(seen["candidates"]) + 1))
    for candidate in seen["candidates"]:
        # Its words and numbers are the conclusion's; no evidence text to copy, no ref to cite.
        assert set(candidate) == {"candidate", "subject", "mechanism", "before", "after"}
        assert candidate["subject"] == subject
        said = f"{candidate['subject']}（{candidate['mechanism']}，"
        assert said in slot["conclusion"]
        assert f"{candidate['before']} → {candidate['after']}）" in slot["conclusion"]
    assert "结论：根因候选：" in session.answer
    # No model plan: code's investigation answers every ask.
    assert server.requests_for("planner") == []


def test_an_explanation_is_cited_by_code_from_its_candidate_number(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    fake_llm({"cause": [_explained(1, f"{subject} 的这一异常可能说明了所问的现象")]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert CANDIDATE_RULE not in [w["rule"] for w in record["guard_warnings"]]
    [explanation] = [
        c for c in record["executor_structured_output"]["claims"] if c["claim_type"] == "root_cause"
    ]
    [slot] = [s for s in record["slots"] if s["candidates"]]
    # Its citations are the candidate's own bindings, verbatim: the model copied none.
    assert explanation["evidence_bindings"] == slot["candidates"][0]["bindings"]
    assert record["gatekeeper_result"]["severity"] != "reject"
    # Code states the evidence the candidates rest on (as the rules engine does): a PASS like its.
    assert session.verdict == "PASS"
    rules = session_start(query=question, engine="rules", run_inline=True)
    assert rules.verdict == "PASS"


def test_a_root_cause_the_model_adds_without_evidence_is_dropped(fake_llm, either_world):
    question, subject, invented = CAUSES[either_world]
    # A cause of its own, citing no candidate: nothing for code to cite it with.
    fake_llm({"cause": [_explained(9, f"{subject} 的根因是{invented}")]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert list(record["blocked_by"].values()) == [CANDIDATE_RULE]
    assert [c["claim_type"] for c in record["executor_structured_output"]["claims"]] == ["observation"] * len(
        record["executor_structured_output"]["claims"]
    )
    # The conclusion is code's ranked list; the invented cause is nowhere in the answer.
    assert f"结论：根因候选：{subject}（" in session.answer
    assert invented not in session.answer
    assert (session.verdict, session.rounds) == ("PASS", 1)


def test_an_explanation_with_a_number_its_candidate_lacks_is_not_taken(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    fake_llm({"cause": [_explained(1, f"{subject} 的异常可能从 12345 次起")]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    executor = next(step for step in session.steps.all() if step.agent == "executor")
    assert "12345" in executor.thought and "未采用" in executor.thought
    assert all(c["claim_type"] == "observation" for c in record["executor_structured_output"]["claims"])
    assert "12345" not in session.answer
    assert session.verdict == "PASS"


def test_an_explanation_with_another_candidates_numbers_cites_that_candidate_too(fake_llm):
    question, subject, _ = CAUSES["demo"]

    def explained_with_the_second(request: dict) -> dict:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        seen = json.loads(user[user.index("<input>") + len("<input>") : user.rindex("</input>")])
        second = seen["candidates"][1]
        return _explained(
            1, f"{subject} 的内存可能从 {second['before']} 升到 {second['after']}，引发 Full GC"
        )

    fake_llm({"cause": [explained_with_the_second]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    [explanation] = [
        c for c in record["executor_structured_output"]["claims"] if c["claim_type"] == "root_cause"
    ]
    [slot] = [s for s in record["slots"] if s["candidates"]]
    first, second = slot["candidates"][:2]
    # Code cites the candidate named and the one whose evidence holds the numbers written.
    assert explanation["evidence_bindings"] == first["bindings"] + second["bindings"]
    assert session.verdict == "PASS"


def test_a_malformed_explanation_degrades_to_the_candidates_and_their_evidence(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    # The reply and its one re-ask: both unreadable.
    fake_llm({"cause": ["根因是 {not json", "还是 {not json"]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert record["executor_output_parse_status"]["status"] == "parse_failed"
    claims = record["executor_structured_output"]["claims"]
    assert claims and all(c["claim_type"] == "observation" for c in claims)
    # What the rules engine states: the candidates and the evidence they rest on, judged by code.
    assert f"结论：根因候选：{subject}（" in session.answer
    assert session.verdict == session_start(query=question, engine="rules", run_inline=True).verdict


def test_on_the_cause_path_code_judges_the_explanation_as_an_inference(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    server = fake_llm({"cause": [_explained(1, f"{subject} 的这一异常可能说明了所问的现象")]})

    session = session_start(query=question, engine="llm", run_inline=True)

    # One model call: the explanation. Its judgement is code's: an inference, never an observation;
    # code's quotes of the evidence are direct observations.
    assert [r["response_format"]["json_schema"]["name"] for r in server.requests] == ["CauseOutput"]
    record = _first_round(session)
    checks = {c["claim_id"]: c["verification"] for c in record["claim_checks"]}
    assert checks.pop("cause-1") == "reasonable_inference"
    assert checks and set(checks.values()) == {"direct_observation"}
    verifier = next(step for step in session.steps.all() if step.agent == "verifier")
    assert verifier.llm_calls == 0 and "未请模型校验" in verifier.thought


def test_a_change_code_settles_is_stated_from_its_evidence_without_a_model_call(fake_llm):
    server = fake_llm()

    session = session_start(
        query="What changed before HighCPUUsage started on payment-service?", engine="llm", run_inline=True
    )

    # Code's quotes need no verifier model; a change ask is no cause to reason about.
    assert server.requests_for("cause") == server.requests_for("verifier") == []
    assert all(c["claim_id"].startswith("moved-") for c in _first_round(session)["claim_checks"])
    rules = session_start(
        query="What changed before HighCPUUsage started on payment-service?", engine="rules", run_inline=True
    )
    assert session.verdict == rules.verdict == "PASS"


@pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
def test_range_results_reach_the_model_as_their_candidates_not_one_by_one(fake_llm, services):
    """Over a metrics source, on the full executor path (a cause beside an ask code leaves open): the
    investigation's range results are not pasted into the prompt; the candidates computed from them
    carry the refs to cite, and the prompt is smaller for it."""
    _entry, middle, leaf = services
    made, results = recorded(services)
    investigation = investigated(made, results, services=set(services))
    stage_input = ExecutorInput(
        query=f"{middle} 为什么变慢？",
        plan=PlannerOutput(goal="查原因", steps=[], narrow_scope=False, focus=[middle], excluded_topics=[]),
        round=1,
        prior_results=results,
        conclusions=[f"结论：{candidates_said(investigation).text}"],
        open_asks=[f"{middle} 的原因"],
        candidates=candidates_said(investigation).candidates,
        computed_from=investigation.read,
    )
    toolbox = RecordingToolbox(session=DiagnosisSessionFactory(query=stage_input.query), round=1, max_calls=4)
    server = fake_llm()

    LLMEngine().execute(stage_input, toolbox)
    first = len(server.requests)
    LLMEngine().execute(dataclasses.replace(stage_input, candidates=[], computed_from=[]), toolbox)

    given, pasted = server.requests[0], server.requests[first]
    seen = _executor_input(server)
    assert seen["prior_tool_messages"] == []
    assert [c["subject"] for c in seen["candidates"]] == [leaf, middle]
    assert seen["candidates"][0]["refs"] == [
        {
            "tool_name": "query_promql",
            "invocation_id": 11,
            "raw_path": "$.series[2]",
            "text": results[0].refs[2].text,
        }
    ]
    assert estimated_tokens(given["messages"]) < estimated_tokens(pasted["messages"])
