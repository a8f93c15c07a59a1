"""The answer stored as structure: a session keeps its record beside the Markdown written from it, and
the Markdown is one fixed template per output type over the record's parts."""

import pytest

from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.answer import (
    AnswerRecord,
    AnswerRef,
    Conclusion,
    Degraded,
    FailedCitation,
    Quote,
    Statement,
    answer_markdown,
)
from diagnosis.pipeline.injected_commands import QUOTE_ONLY
from diagnosis.services.sessions import session_start

LOG_REF = AnswerRef(tool_name="query_logs", invocation_id=8, raw_path="$.logs[0]")
FINDING = Statement(
    claim_id="c1",
    text="order-service 的连接池等待超时",
    quotes=[Quote(excerpt="[ERROR] HikariPool-1 - Connection is not available", ref=LOG_REF)],
)


def test_the_raw_reference_is_the_tool_its_call_and_the_path():
    assert LOG_REF.text() == "query_logs #8 $.logs[0]"
    assert AnswerRef(tool_name="query_alerts", invocation_id=3).text() == "query_alerts #3"


def test_code_written_answer_opens_with_its_conclusions_then_findings_and_actions():
    record = AnswerRecord(
        output_type="NORMAL",
        conclusions=[Conclusion(statement="是，order-service 日志有超时", source="demo", refs=[LOG_REF])],
        findings=[FINDING],
        allowed_actions=["查询 order-service 的 GC 日志"],
    )

    assert answer_markdown(record) == (
        "结论：是，order-service 日志有超时 · 来源 demo\n\n"
        "**已确认的发现**\n"
        "- order-service 的连接池等待超时\n"
        "  - 证据：「[ERROR] HikariPool-1 - Connection is not available」（来源：query_logs #8 $.logs[0]）\n\n"
        "**建议的取证动作**\n"
        "- 查询 order-service 的 GC 日志"
    )


def test_a_held_back_quote_is_named_by_its_reference_only():
    record = AnswerRecord(
        output_type="NORMAL",
        findings=[FINDING.model_copy(update={"quotes": [Quote(excerpt="", ref=LOG_REF)]})],
    )

    assert answer_markdown(record).endswith(
        "- order-service 的连接池等待超时（来源：query_logs #8 $.logs[0]）"
    )
    prose_record = AnswerRecord(
        output_type="NORMAL",
        findings=[
            FINDING.model_copy(
                update={
                    "quotes": [
                        *FINDING.quotes,
                        Quote(excerpt="", ref=LOG_REF.model_copy(update={"invocation_id": 9})),
                    ]
                }
            )
        ],
    )
    assert f"  - 证据：{QUOTE_ONLY}（来源：query_logs #9 $.logs[0]）" in answer_markdown(prose_record)


def test_the_models_prose_stands_for_the_code_written_body_after_the_conclusions():
    record = AnswerRecord(output_type="NORMAL", findings=[FINDING], prose="撰写的答案")
    concluded = record.model_copy(update={"conclusions": [Conclusion(statement="是", source="demo")]})

    assert answer_markdown(record) == "撰写的答案"
    # Put first by construction, whatever the prose opens with (its own 结论 heading included).
    assert answer_markdown(concluded.model_copy(update={"prose": "**结论**\n- 撰写的答案"})) == (
        "结论：是 · 来源 demo\n\n**结论**\n- 撰写的答案"
    )


def test_focus_notes_open_a_normal_answer_and_close_a_degraded_one_and_a_fallback_comes_first():
    notes = ["问题中的 kafka-service 不在已知服务中"]
    normal = AnswerRecord(output_type="NORMAL", prose="答案", focus_notes=notes, fallback_notice="模型不可用")
    degraded = AnswerRecord(
        output_type="DEGRADED",
        focus_notes=notes,
        degraded=Degraded(failed=[FailedCitation(ref=LOG_REF, rule="evidence.excerpt_mismatch")]),
    )

    assert answer_markdown(normal) == "模型不可用\n\n- 问题中的 kafka-service 不在已知服务中\n\n答案"
    text = answer_markdown(degraded)
    assert "- query_logs #8 $.logs[0] 的引用未通过核验（evidence.excerpt_mismatch）" in text
    assert text.endswith("说明：\n- 问题中的 kafka-service 不在已知服务中")


@pytest.mark.django_db
def test_a_session_stores_its_record_and_the_markdown_written_from_it(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}

    session = session_start(query="只确认 payment-service 当前是否存在 HighCPUUsage 告警", run_inline=True)

    assert session.output_type == DiagnosisSession.OutputType.NORMAL
    record = AnswerRecord.model_validate(session.answer_record)
    assert answer_markdown(record) == session.answer
    assert record.prose == ""  # the rules engine's answer is code's own: kept as structure
    # The composer stage's own text (`answer_from_material`, over the material's dicts) is the record's.
    assert session.self_evaluation["verifier_evaluation"]["composer_output"]["answer"] == session.answer
    assert record.conclusions and record.findings
    refs = [quote.ref for finding in record.findings for quote in finding.quotes]
    assert refs and all(
        ref.invocation_id in session.tool_invocations.values_list("pk", flat=True) for ref in refs
    )
