"""A question read once per session: its window, scope, focus and asks, in one object every round reads."""

import pytest

from diagnosis.pipeline import focus as focus_module
from diagnosis.pipeline.question import question_read
from tests.diagnosis.pipeline.asks.support import DEMO, PLAIN, world

QUESTION = "只确认 order-service 最近 15 分钟是否存在 HighMemoryUsage 告警，不要分析 OOM"


@pytest.fixture
def focus_reads(monkeypatch) -> list[tuple]:
    """Every time a focus is read from a question's text."""
    reads: list[tuple] = []
    read = focus_module.question_focus

    def counted(**kwargs):
        reads.append(tuple(kwargs["excluded"]))
        return read(**kwargs)

    monkeypatch.setattr(focus_module, "question_focus", counted)
    return reads


def test_a_question_is_read_into_its_window_scope_focus_and_asks():
    question = question_read(query=QUESTION, world=world(DEMO))

    assert question.text == QUESTION
    assert (question.window.label, question.window.asked) == ("最近 15 分钟", True)
    assert question.narrow_scope is True
    assert question.excluded_topics == ("OOM",)
    assert question.focus.services == ("order-service",)
    assert question.focus.alerts == ("HighMemoryUsage",)
    assert [(ask.kind, ask.subject, ask.window.minutes) for ask in question.asks] == [
        ("existence", "HighMemoryUsage", 15)
    ]


def test_a_question_naming_no_window_gets_the_log_sources_window_as_not_asked():
    question = question_read(query="checkout 为什么一直重启？", world=world(PLAIN))

    assert (question.window.minutes, question.window.asked) == (60, False)
    assert (question.narrow_scope, question.excluded_topics) == (False, ())


def test_the_planners_exclusions_come_first_and_the_questions_own_are_never_dropped():
    question = question_read(query=QUESTION, world=world(DEMO))

    assert question.excluded_with(["user-service", "OOM"]) == ["user-service", "OOM"]
    assert question.excluded_with([]) == ["OOM"]


def test_the_focus_is_read_again_only_for_what_a_planner_excludes_beyond_the_question(focus_reads):
    session_world = world(DEMO)
    question = question_read(query=QUESTION, world=session_world)

    same = question.focus_without(question.excluded_with(["OOM"]), world=session_world)
    narrower = [
        question.focus_without(question.excluded_with(["HighMemoryUsage"]), world=session_world)
        for _round in (1, 2)
    ]

    assert same is question.focus
    assert narrower[0].alerts == () and narrower[1] is narrower[0]
    # Once when the question was read, once for the planner's wider exclusion, whatever the rounds.
    assert focus_reads == [("OOM",), ("HighMemoryUsage", "OOM")]
