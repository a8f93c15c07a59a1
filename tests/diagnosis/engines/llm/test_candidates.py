"""The llm engine explains the investigation's ranked candidates and may not add one (§23), through the
real openai SDK against the local fake server, on the demo world and the shop world."""

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


def test_the_ranked_candidates_reach_the_executor_with_their_numbers_and_refs(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    server = fake_llm()

    session = session_start(query=question, engine="llm", run_inline=True)

    seen = _executor_input(server)
    # The candidates once: as such, not also as their conclusion line.
    assert [line for line in seen["conclusions"] if "根因候选" in line] == []
    [slot] = [s for s in _first_round(session)["slots"] if s["candidates"]]
    conclusion = slot["conclusion"]
    assert seen["candidates"]
    for candidate in seen["candidates"]:
        assert candidate["subject"] == subject
        # Its words and numbers are the conclusion's, each ref one the model can cite as it is.
        said = f"{candidate['subject']}（{candidate['mechanism']}，{candidate['onset']}起，"
        assert said + f"{candidate['before']} → {candidate['after']}）" in conclusion
        assert candidate["refs"]
        invocations = {i.pk: i for i in session.tool_invocations.all()}
        shown = {
            (message["invocation_id"], r["raw_path"]): r["text"]
            for message in seen["prior_tool_messages"]
            for r in message["evidence_refs"]
        }
        for ref in candidate["refs"]:
            recorded = invocations[ref["invocation_id"]]
            assert recorded.tool_name == ref["tool_name"]
            # Its text once: where a tool message the model is shown already holds it, only there.
            text = ref.get("text") or shown[(ref["invocation_id"], ref["raw_path"])]
            assert ("text" in ref) != ((ref["invocation_id"], ref["raw_path"]) in shown)
            assert {"raw_path": ref["raw_path"], "text": text} in recorded.evidence_refs
    assert session.answer.startswith("结论：根因候选：") or "结论：根因候选：" in session.answer


def test_a_root_cause_the_model_adds_without_evidence_is_dropped(fake_llm, either_world):
    question, subject, invented = CAUSES[either_world]
    added = {
        "claim_id": "claim-1",
        "claim_type": "root_cause",
        "claim_text": f"{subject} 的根因是{invented}",
        "evidence_bindings": [],
    }
    fake_llm(
        {
            "executor": [
                {
                    "answer_version": "executor_evidence_v2",
                    "claims": [added],
                    "hypotheses": [f"{invented}导致 {subject} 异常"],
                    "missing_info": [],
                    "recommended_actions": [],
                    "diagnosis_summary": invented,
                    "user_facing_answer": "",
                }
            ]
        }
    )

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert record["blocked_by"] == {"claim-1": CANDIDATE_RULE}
    assert record["executor_structured_output"]["claims"] == []
    assert [w["rule"] for w in record["guard_warnings"]].count(CANDIDATE_RULE) == 1
    # The conclusion is code's ranked list; the invented cause is nowhere in the answer.
    assert f"结论：根因候选：{subject}（" in session.answer
    assert invented not in session.answer
    # Answered by the candidates, as if nothing had been added: an inference, with its disclaimer, and
    # no second round to look for what the model made up.
    assert (session.verdict, session.output_type, session.rounds) == (
        "LOW_CONFID",
        "LOW_CONFID_WITH_DISCLAIMER",
        1,
    )


def test_a_root_cause_about_a_ranked_candidate_with_evidence_is_kept(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]

    def explained(request: dict) -> dict:
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        seen = json.loads(user[user.index("<input>") + len("<input>") : user.rindex("</input>")])
        ref = seen["candidates"][0]["refs"][0]
        text = ref.get("text") or next(
            r["text"]
            for message in seen["prior_tool_messages"]
            if message["invocation_id"] == ref["invocation_id"]
            for r in message["evidence_refs"]
            if r["raw_path"] == ref["raw_path"]
        )
        return {
            "answer_version": "executor_evidence_v2",
            "claims": [
                {
                    "claim_id": "claim-1",
                    "claim_type": "root_cause",
                    "claim_text": f"{subject} 的根因候选：{text}",
                    "evidence_bindings": [
                        {
                            "tool_name": ref["tool_name"],
                            "source_invocation_id": ref["invocation_id"],
                            "raw_path": ref["raw_path"],
                            "evidence_excerpt": text,
                        }
                    ],
                }
            ],
            "hypotheses": [],
            "missing_info": [],
            "recommended_actions": [],
            "diagnosis_summary": "解释候选",
            "user_facing_answer": "",
        }

    fake_llm({"executor": [explained]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert CANDIDATE_RULE not in [w["rule"] for w in record["guard_warnings"]]
    assert [c["claim_id"] for c in record["executor_structured_output"]["claims"]] == ["claim-1"]


def test_a_malformed_executor_reply_degrades_to_the_candidates_as_before(fake_llm, either_world):
    question, subject, _ = CAUSES[either_world]
    # The tool turn, the final turn and its one re-ask: all unreadable.
    fake_llm({"executor": ["根因是 {not json", "还是 {not json", "仍然 {not json"]})

    session = session_start(query=question, engine="llm", run_inline=True)

    record = _first_round(session)
    assert record["executor_output_parse_status"]["status"] == "parse_failed"
    assert record["executor_structured_output"]["claims"] == []
    # Answered by the slots alone: the candidates, an inference, never a PASS.
    assert f"结论：根因候选：{subject}（" in session.answer
    assert record["verdict"] == "LOW_CONFID"


@pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
def test_range_results_reach_the_model_as_their_candidates_not_one_by_one(fake_llm, services):
    """Over a metrics source: the investigation's range results are not pasted into the prompt; the
    candidates computed from them carry the refs to cite, and the prompt is smaller for it."""
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
