"""`manage.py llm_real`'s comparison of the two engines on one question, against the fake server (the
real model runs only in `make test-llm-real`), in the demo world and a world with other names."""

import re

import pytest

from diagnosis.evaluation.real_llm.comparison import (
    HEADER,
    engine_run,
    engines_compared,
    summary_lines,
    unresolved_names,
)
from diagnosis.pipeline.records import verifier_record_read
from tests.factories import ToolInvocationFactory

pytestmark = pytest.mark.django_db

QUESTIONS = {
    "demo": "只确认 order-service 是否存在 HighMemoryUsage 告警",
    "shop": "只确认 checkout 是否存在 KubePodCrashLooping 告警",
}


def test_one_question_is_compared_slot_by_slot_and_printed_as_a_row(fake_llm, either_world):
    fake_llm()

    comparison = engines_compared(QUESTIONS[either_world], number=1)

    llm, rules = comparison.llm, comparison.rules
    assert (llm.engine, rules.engine) == ("llm", "rules")
    assert llm.slots == rules.slots >= 1
    assert llm.slots_filled == rules.slots_filled == rules.slots
    assert (llm.verdict, rules.verdict) == ("PASS", "PASS")
    assert llm.prompt_tokens > 0 and rules.prompt_tokens == 0
    assert llm.unresolved_names == 0 and not llm.answered_instead
    [row] = comparison.lines()
    assert HEADER.split()[:2] == ["#", "slots"]
    number, slots, _of, asked, verdicts, tokens, walls, unresolved, *question = row.split()
    assert (number, slots, asked, verdicts) == (
        "1",
        f"{llm.slots_filled}/{rules.slots_filled}",
        str(llm.slots),
        "PASS/PASS",
    )
    assert int(tokens) == llm.prompt_tokens and unresolved == "0"
    assert re.fullmatch(r"\d+\.\d/\d+\.\d", walls)
    assert " ".join(question) == QUESTIONS[either_world]
    summary = "\n".join(summary_lines([comparison]))
    assert "llm PASS 1/1" in summary and "slots below the rules engine on 0 question(s)" in summary


def test_a_recorded_call_with_a_name_the_sources_do_not_know_is_counted(fake_llm):
    fake_llm()
    run = engine_run(QUESTIONS["demo"], engine="llm")
    record = verifier_record_read(run.session.self_evaluation["verifier_evaluation"])

    ToolInvocationFactory(session=run.session, tool_name="query_alerts", input={"service": "orders-svc"})
    ToolInvocationFactory(session=run.session, tool_name="query_alerts", input={"service": "order-service"})

    assert unresolved_names(run.session, record) == 1


def test_a_name_the_question_asked_about_is_searched_as_written_and_not_counted(fake_llm):
    fake_llm()

    run = engine_run("只确认 paymnet-service 是否存在告警", engine="llm")

    record = verifier_record_read(run.session.self_evaluation["verifier_evaluation"])
    assert [unknown["name"] for unknown in record.focus["unknown"]] == ["paymnet-service"]
    assert run.session.tool_invocations.filter(input__service="paymnet-service").exists()
    assert run.unresolved_names == 0


def test_an_llm_that_fills_fewer_slots_is_named_in_the_summary(fake_llm, settings):
    # Every model call fails: the rules engine answers instead, which the row marks.
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_MAX_RETRIES": 0}
    fake_llm({stage: [{"http_status": 500}] * 8 for stage in ("planner", "executor", "verifier", "composer")})

    comparison = engines_compared(QUESTIONS["demo"], number=3)

    assert comparison.llm.answered_instead and comparison.llm.verdict_label.endswith("*")
    summary = "\n".join(summary_lines([comparison]))
    assert "answered by the rules engine instead (*) 1" in summary
    assert "llm PASS 0/1" in summary
