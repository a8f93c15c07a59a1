"""Investigations end to end on the demo world (rules engine, inline): a why question is answered with
root-cause candidates and a what-changed question with the moves by time, each number checked; the
candidates are inferences, and an answer of nothing but them is never PASS."""

import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.evidence import session_evidence
from diagnosis.services.sessions import session_start

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}


def run(question: str) -> DiagnosisSession:
    return session_start(query=question, engine="rules", run_inline=True)


def first_conclusion(session: DiagnosisSession) -> str:
    return next(line for line in session.answer.splitlines() if line.startswith("结论："))


def round_record(session: DiagnosisSession) -> dict:
    return session.self_evaluation["verifier_evaluation"]


def test_why_full_gc_names_the_memory_of_order_service_first_with_its_numbers():
    session = run("order-service 为什么频繁 Full GC？")

    line = first_conclusion(session)
    assert line == (
        "结论：根因候选：order-service（HighMemoryUsage 告警触发，14:45起，85% → 91%）；"
        "其次：order-service（日志「内存使用率过高」升高，14:47起，86.2% → 91.0%）"
    )
    [slot] = [s for s in round_record(session)["slots"] if s["ask"]["kind"] == "cause"]
    assert slot["filled"] and slot["inference"]
    # The evidence the candidates rest on is stated as verified findings; the candidates are not.
    claims = round_record(session)["executor_structured_output"]["claims"]
    assert any("86.2%" in c["claim_text"] and c["claim_type"] == "observation" for c in claims)
    assert session.verdict == "PASS"


def test_what_changed_before_an_alert_lists_the_moves_by_time():
    session = run("What changed before HighCPUUsage started on payment-service?")

    assert first_conclusion(session) == (
        "结论：变化（按时间）：payment-service（HighCPUUsage 告警触发，14:35起，80% → 92%）；"
        "payment-service（日志「CPU使用率过高」升高，14:51起，86.0% → 92.0%）"
    )
    assert [s["ask"]["kind"] for s in round_record(session)["slots"]] == ["change"]
    # "What" is what a change ask answers: nothing is left unread.
    assert "未能理解所问" not in session.answer
    assert session.verdict == "PASS"


def test_the_answer_page_draws_the_candidates_moves_on_a_timeline():
    session = run("order-service 为什么频繁 Full GC？")

    timeline = session_evidence(session=session).timeline

    assert [track.kind for track in timeline.tracks] == ["alert", "log"]
    assert [track.label for track in timeline.tracks] == first_conclusion(session).removeprefix(
        "结论：根因候选："
    ).split("；其次：")


def test_an_answer_without_an_investigation_has_no_timeline():
    session = run("order-service 数据库连接池是否耗尽？")

    assert session_evidence(session=session).timeline is None
