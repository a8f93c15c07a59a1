"""The orchestration of rounds: one retry at most, never after a REJECT, every stage recorded."""

import sys
from collections.abc import Callable

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.asks.reader import asks_read
from diagnosis.pipeline.focus import question_focus
from diagnosis.pipeline.orchestrator import RETRY_INSTRUCTION
from diagnosis.pipeline.records import verifier_record_read
from diagnosis.pipeline.scope import scope_parse
from diagnosis.pipeline.windows import window_in
from diagnosis.selectors.evidence import verifier_rounds
from diagnosis.services import session_runner
from diagnosis.services.sessions import session_start

pytestmark = pytest.mark.django_db

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
NOTHING_CHECKED = {"claim_checks": [], "facts_checked": [], "rationale": "没有核查"}
FABRICATED_CITATION = [
    {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
    {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": "order-service 存在 HighMemoryUsage 告警",
                "evidence_bindings": [
                    {
                        "tool_name": "query_alerts",
                        "source_invocation_id": 999999,
                        "raw_path": "$.alerts[0]",
                        "evidence_excerpt": "{{ref:query_alerts:0:$.alerts[0]}}",
                    }
                ],
            }
        ],
        "hypotheses": [],
        "missing_info": [],
        "recommended_actions": [],
        "diagnosis_summary": "",
        "user_facing_answer": "",
    },
]


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "MAX_ROUNDS": 3}


def planner_rounds(session: DiagnosisSession) -> list[int]:
    return list(session.steps.filter(agent=AgentStep.Agent.PLANNER).values_list("round", flat=True))


def test_low_confidence_is_retried_once_with_the_gaps_and_never_a_third_time(fake_llm, settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MAX_ROUNDS": 2}
    # Each round's verifier judges nothing, asked twice (a reply that leaves a claim out is re-asked).
    fake_llm({"verifier": [NOTHING_CHECKED] * 4})

    session = session_start(query=QUERY, engine="llm", run_inline=True)

    assert planner_rounds(session) == [1, 2]
    assert session.rounds == 2
    assert session.output_type == DiagnosisSession.OutputType.LOW_CONFID_WITH_DISCLAIMER
    evaluation = session.self_evaluation["verifier_evaluation"]
    assert evaluation["retry_context"]["round"] == 1
    assert evaluation["retry_context"]["instruction"] == RETRY_INSTRUCTION
    assert evaluation["retry_context"]["missing_evidence_facts"]
    # Each round is stored once: the first under `rounds`, the final one is the record itself.
    assert [r["round"] for r in evaluation["rounds"]] == [1]
    assert evaluation["round"] == 2
    assert [r.round for r in verifier_rounds(record=verifier_record_read(evaluation))] == [1, 2]


def calls_counted(monkeypatch, function: Callable) -> list[tuple]:
    """Every call of `function`, through whichever module imported it."""
    calls: list[tuple] = []

    def counted(*args, **kwargs):
        calls.append((args, kwargs))
        return function(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__dict__", {}).get(function.__name__) is function:
            monkeypatch.setattr(module, function.__name__, counted)
    return calls


def test_the_question_is_read_once_and_no_call_is_read_back_however_many_rounds(
    fake_llm, settings, monkeypatch
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MAX_ROUNDS": 2}
    fake_llm({"verifier": [NOTHING_CHECKED] * 4})
    readings = {
        parse.__name__: calls_counted(monkeypatch, parse)
        for parse in (scope_parse, window_in, question_focus, asks_read)
    }
    # What the session's rounds query, up to the rule evaluation that follows it (it reads the calls once).
    queries_before_evaluation = []
    evaluate = session_runner.rule_evaluation_run

    def evaluated(**kwargs):
        queries_before_evaluation.append(len(captured))
        return evaluate(**kwargs)

    monkeypatch.setattr(session_runner, "rule_evaluation_run", evaluated)

    with CaptureQueriesContext(connection) as captured:
        session = session_start(query=QUERY, engine="llm", run_inline=True)

    assert session.rounds == 2
    assert {name: len(calls) for name, calls in readings.items()} == dict.fromkeys(readings, 1)
    assert session.tool_invocations.filter(round=1).exists()
    reads = [
        query["sql"]
        for query in captured.captured_queries[: queries_before_evaluation[0]]
        if query["sql"].startswith("SELECT") and '"diagnosis_toolinvocation"' in query["sql"]
    ]
    assert reads == []


def test_a_reject_is_degraded_at_once_even_with_rounds_left(fake_llm):
    fake_llm({"executor": FABRICATED_CITATION})

    session = session_start(query=QUERY, engine="llm", run_inline=True)

    assert planner_rounds(session) == [1]
    assert session.output_type == DiagnosisSession.OutputType.DEGRADED
    assert session.verdict == "REJECT"
    verifier_step = session.steps.get(agent=AgentStep.Agent.VERIFIER)
    assert verifier_step.status == AgentStep.Status.SKIPPED
    assert not session.steps.filter(agent=AgentStep.Agent.COMPOSER).exists()


def test_a_stage_that_raises_ends_the_session_failed_with_the_failed_step_recorded(monkeypatch):
    def broken_verifier(self, stage_input):
        raise RuntimeError("verifier exploded")

    monkeypatch.setattr("diagnosis.engines.rules.RulesEngine.verify", broken_verifier)

    session = session_start(query=QUERY, engine="rules", run_inline=True)

    assert session.status == DiagnosisSession.Status.FAILED
    assert session.error == "RuntimeError: verifier exploded"
    assert "Traceback" not in session.error
    assert session.output_type == ""
    failed = session.steps.get(agent=AgentStep.Agent.VERIFIER)
    assert failed.status == AgentStep.Status.FAILED
    assert session.self_evaluation["rule_evaluation"]["evidence_score"] == 0
