"""The rules engine's executor: tool calls within budget, one claim per observed fact, exact quotes."""

import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


def claims_of(session: DiagnosisSession) -> list[dict]:
    return session.self_evaluation["verifier_evaluation"]["executor_structured_output"]["claims"]


def test_a_spent_tool_budget_leaves_the_rest_as_gaps_and_the_session_completes(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MAX_TOOL_CALLS": 2, "MAX_ROUNDS": 1}

    session = session_start(
        query="payment-service、order-service、user-service 的 CPU 和内存怎么样",
        engine="rules",
        run_inline=True,
    )

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.tool_invocations.count() == 2
    missing = session.self_evaluation["verifier_evaluation"]["executor_structured_output"]["missing_info"]
    assert any("工具调用次数已用完" in item for item in missing)


def test_unrelated_log_lines_of_one_service_are_separate_claims():
    session = session_start(query="order-service 有什么异常", engine="rules", run_inline=True)

    order_logs = [c for c in claims_of(session) if c["claim_text"].startswith("order-service 的")]
    texts = [" ".join(b["evidence_excerpt"] for b in c["evidence_bindings"]) for c in order_logs]
    assert any("OutOfMemoryError" in text for text in texts)
    assert any("HikariPool" in text for text in texts)
    assert not any("OutOfMemoryError" in text and "HikariPool" in text for text in texts)


def test_every_excerpt_is_the_recorded_evidence_text_verbatim():
    session = session_start(
        query="只确认 user-service 是否存在 SlowResponse 告警和慢请求日志", engine="rules", run_inline=True
    )

    recorded = {
        (invocation.pk, ref["raw_path"]): ref["text"]
        for invocation in session.tool_invocations.all()
        for ref in invocation.evidence_refs
    }
    for claim in claims_of(session):
        for binding in claim["evidence_bindings"]:
            assert (
                binding["evidence_excerpt"]
                == recorded[(binding["source_invocation_id"], binding["raw_path"])]
            )


def tool_calls(question: str) -> list[tuple[str, dict]]:
    session = session_start(query=question, engine="rules", run_inline=True)
    return [(call.tool_name, call.input) for call in session.tool_invocations.order_by("pk")]


def test_both_chinese_words_for_alerts_make_the_same_tool_calls_in_either_world(either_world):
    calls = tool_calls("现在有哪些报警")

    assert calls == tool_calls("现在有哪些告警")
    assert [tool for tool, _ in calls] == ["query_metrics"]


# (question about a service, the alert of another service whose runbook shares a word with it)
FOREIGN_RUNBOOK = {
    "demo": ("order-service 响应慢怎么处理", "SlowResponse"),
    "shop": ("catalog 响应慢怎么处理", "PostgresReplicationLag"),
}


def test_a_question_about_a_service_gets_no_guidance_from_another_services_runbook(either_world):
    question, foreign = FOREIGN_RUNBOOK[either_world]

    session = session_start(query=question, engine="rules", run_inline=True)

    found = [
        block
        for call in session.tool_invocations.filter(tool_name="lookup_knowledge")
        for block in call.output["evidence_blocks"]
    ]
    # The free-text search did find the other runbook; it is not presented as this service's.
    assert any(block["title"].startswith(foreign) for block in found)
    assert not any(foreign in claim["claim_text"] for claim in claims_of(session))
    assert foreign not in session.answer
