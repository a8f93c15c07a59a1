import pytest

from diagnosis.engines.rules.composer import compose_by_rules
from diagnosis.pipeline.answer import AnswerRecord, answer_markdown
from diagnosis.pipeline.composer import (
    answer_from_material,
    composer_guard,
    composer_material_build,
    composer_material_from_record,
    degraded_of,
    finding_lines,
    states_confirmed_finding,
)
from diagnosis.pipeline.contracts import Claim, ClaimCheck, ComposerInput, ExecutorOutput, VerifierOutput
from tests.diagnosis.pipeline.support import one_round
from tests.factories import (
    HIKARI_LOG_TEXT,
    MEMORY_ALERT_TEXT,
    CompletedSessionFactory,
    binding_for,
    recorded_invocation,
)

pytestmark = pytest.mark.django_db

EXECUTOR_ANSWER = "order-service 内存泄漏已确认，建议立即重启"


def executor_output(*claims, actions=()):
    return ExecutorOutput(
        claims=[
            Claim(
                claim_id=f"claim-{i}", claim_type="observation", claim_text=text, evidence_bindings=bindings
            )
            for i, (text, bindings) in enumerate(claims, start=1)
        ],
        hypotheses=["可能存在内存泄漏"],
        missing_info=[],
        recommended_actions=list(actions),
        diagnosis_summary=EXECUTOR_ANSWER,
        user_facing_answer=EXECUTOR_ANSWER,
    )


def pipeline(output, verifications, invocations):
    """One round for `output` (gatekeeper, verifier as scripted, verdict), as the orchestrator runs it."""
    verifier_output = VerifierOutput(
        claim_checks=[
            ClaimCheck(claim_id=f"claim-{i}", verification=v, detail="", evidence_refs=[])
            for i, v in enumerate(verifications, start=1)
        ],
        facts_checked=[],
        rationale="",
    )
    result = one_round(executor_output=output, verifier_output=verifier_output, invocations=invocations)
    return result.verification, result.gatekeeper_result


@pytest.fixture
def log(session):
    return recorded_invocation(session, "query_logs", "$.logs[0]", HIKARI_LOG_TEXT)


def test_material_holds_only_what_the_verifier_allowed(alert, log):
    output = executor_output(
        ("order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%", [binding_for(alert)]),
        ("order-service 连接池可能是内存升高的原因", [binding_for(log)]),
        ("order-service 内存泄漏已确认", [binding_for(alert)]),
        ("order-service 堆内存 3.9GB", [binding_for(alert)]),
        actions=[
            "继续查看 order-service 的 GC 日志与堆转储",
            "立即重启 order-service",
            "检查 payment-service 的内存 97%",
        ],
    )
    verification, result = pipeline(
        output,
        ["direct_observation", "reasonable_inference", "unsupported", "direct_observation"],
        [alert, log],
    )

    material = composer_material_build(
        query="order-service 内存怎么了",
        executor_output=output,
        verification=verification,
        gatekeeper_result=result,
    )

    assert material.confirmed_findings == [
        {
            "claim_id": "claim-1",
            "claim_text": "order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%",
            "evidence": [{"excerpt": MEMORY_ALERT_TEXT, "source": f"query_alerts #{alert.pk} $.alerts[0]"}],
        }
    ]
    assert [item["claim_id"] for item in material.reasonable_inferences] == ["claim-2"]
    assert material.allowed_actions == ["继续查看 order-service 的 GC 日志与堆转储"]
    assert material.gaps == verification.gaps and len(material.gaps) == 3
    assert "内存泄漏已确认" not in str(material.confirmed_findings + material.reasonable_inferences)


@pytest.fixture
def material(alert):
    output = executor_output(
        ("order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%", [binding_for(alert)])
    )
    verification, result = pipeline(output, ["direct_observation"], [alert])
    return composer_material_build(
        query="order-service 是否有内存告警",
        executor_output=output,
        verification=verification,
        gatekeeper_result=result,
    )


def test_guard_flags_a_number_that_is_not_in_the_material(material):
    answer = "order-service 存在 HighMemoryUsage 告警，内存使用率 97%，JVM 堆内存 3.8GB/4GB。"

    assert composer_guard(answer=answer, material=material) == ["97%"]


def test_guard_flags_services_alerts_endpoints_and_error_codes_not_in_the_material(material):
    answer = "payment-service 的 HighCPUUsage 告警导致 /api/v1/pay 返回 ERR_TIMEOUT"

    assert composer_guard(answer=answer, material=material) == [
        "payment-service",
        "HighCPUUsage",
        "/api/v1/pay",
        "ERR_TIMEOUT",
    ]


def test_guard_flags_raw_json_and_tool_output(material):
    answer = 'order-service 告警如下：{"alert_name": "HighMemoryUsage"}，见 evidence_refs'

    assert {'{"alert_name":', "evidence_refs"} <= set(composer_guard(answer=answer, material=material))


def test_guard_flags_a_fix_recommendation_that_names_no_new_token(material):
    answer = "order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%。建议立即重启 order-service。"

    assert composer_guard(answer=answer, material=material) == ["处置建议：建议立即重启 order-service"]


def test_an_answer_built_from_the_material_passes_the_guard(material, alert):
    answer = answer_from_material(material)

    assert composer_guard(answer=answer, material=material) == []
    assert answer == (
        "**已确认的发现**\n"
        "- order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%\n"
        f"  - 证据：「{MEMORY_ALERT_TEXT}」（来源：query_alerts #{alert.pk} $.alerts[0]）"
    )
    assert compose_by_rules(material).answer == answer


def test_a_faithful_composer_answer_passes_the_guard(material):
    answer = "order-service 当前存在 HighMemoryUsage 告警（firing），内存使用率 91.0%，JVM 堆内存 3.8GB / 4GB，已持续 15 分钟。"

    assert composer_guard(answer=answer, material=material) == []


def test_an_answer_without_findings_says_so(alert):
    output = executor_output(("order-service 内存泄漏已确认", [binding_for(alert)]))
    verification, result = pipeline(output, ["unsupported"], [alert])
    material = composer_material_build(
        query="q", executor_output=output, verification=verification, gatekeeper_result=result
    )

    assert answer_from_material(material) == "当前未获得可直接确认的结论。"


def user_facing_text(*, output_type, composer_answer, verification, gatekeeper_result):
    """The stored answer of a record holding the composer's prose (one fixed template per output type)."""
    degraded = degraded_of(verification=verification, gatekeeper_result=gatekeeper_result)
    return answer_markdown(
        AnswerRecord(
            output_type=output_type,
            prose=composer_answer,
            gaps=verification.gaps,
            degraded=degraded if output_type == "DEGRADED" else None,
        )
    )


def test_normal_shows_the_composer_answer_as_is(material, alert):
    output = executor_output(("order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)]))
    verification, result = pipeline(output, ["direct_observation"], [alert])

    text = user_facing_text(
        output_type="NORMAL",
        composer_answer="撰写的答案",
        verification=verification,
        gatekeeper_result=result,
    )

    assert text == "撰写的答案"


def test_low_confid_uses_the_disclaimer_template_with_verifier_gaps(alert):
    output = executor_output(
        ("order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)]),
        ("order-service 内存泄漏已确认", [binding_for(alert)]),
    )
    verification, result = pipeline(output, ["direct_observation", "unsupported"], [alert])

    text = user_facing_text(
        output_type="LOW_CONFID_WITH_DISCLAIMER",
        composer_answer="撰写的答案",
        verification=verification,
        gatekeeper_result=result,
    )

    assert text == (
        "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。\n\n"
        "撰写的答案\n\n"
        "当前缺口：\n"
        "- “order-service 内存泄漏已确认”缺少直接证据"
    )


def test_low_confid_without_gaps_has_no_gap_section(alert):
    output = executor_output(
        ("order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert), binding_for(alert, "firing")])
    )
    verification, result = pipeline(output, ["direct_observation"], [alert])

    text = user_facing_text(
        output_type="LOW_CONFID_WITH_DISCLAIMER",
        composer_answer="撰写的答案",
        verification=verification,
        gatekeeper_result=result,
    )

    assert text == "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。\n\n撰写的答案"


def test_degraded_quotes_only_verified_evidence_and_never_executor_claims(alert, log):
    claim_texts = ["order-service 内存使用率达到 97%", "order-service 的连接池已被确认耗尽"]
    output = executor_output(
        (claim_texts[0], [binding_for(alert, "HighMemoryUsage firing service=order-service: 当前 97%")]),
        (claim_texts[1], [binding_for(log)]),
    )
    verification, result = pipeline(output, [], [alert, log])

    text = user_facing_text(
        output_type="DEGRADED",
        composer_answer=EXECUTOR_ANSWER,
        verification=verification,
        gatekeeper_result=result,
    )

    assert text == (
        "当前无法基于已获取证据生成可靠结论，建议人工介入。\n\n"
        "已确认信息：\n"
        f"- 「{HIKARI_LOG_TEXT}」（来源：query_logs #{log.pk} $.logs[0]）\n\n"
        "证据缺口：\n"
        f"- query_alerts #{alert.pk} $.alerts[0] 的引用未通过核验（evidence.excerpt_mismatch）\n"
        "- 1 条断言与证据矛盾或无法核实\n"
        "- 1 条断言缺少直接证据\n\n"
        "建议下一步：\n"
        "- 人工复核本次会话的工具调用记录与证据引用（见诊断轨迹）。\n"
        "- 针对上述证据缺口补充检索后，重新发起诊断。"
    )
    assert not any(claim in text for claim in claim_texts)
    assert EXECUTOR_ANSWER not in text and "97%" not in text


def test_multi_line_and_long_excerpts_are_quoted_on_one_line():
    runbook = "HighMemoryUsage 处理手册（runbook.md）: 1. 查看 JVM 堆内存\n2. 查看 GC 日志"
    long_log = "[2026-11-29 14:52:00][ERROR][order-service] " + "连接池等待超时，" * 40
    item = {
        "claim_text": "order-service 内存告警\n有处理手册",
        "evidence": [{"excerpt": runbook, "source": "lookup_knowledge #7 $.evidence_blocks[0]"}],
    }

    lines = finding_lines(
        [item, item | {"evidence": [{"excerpt": long_log, "source": "query_logs #8 $.logs[0]"}]}]
    )

    assert lines[:2] == [
        "- order-service 内存告警 有处理手册",
        "  - 证据：「HighMemoryUsage 处理手册（runbook.md）: 1. 查看 JVM 堆内存 2. 查看 GC 日志」"
        "（来源：lookup_knowledge #7 $.evidence_blocks[0]）",
    ]
    assert lines[3].endswith("连接池等待超时…」（来源：query_logs #8 $.logs[0]）") and len(lines[3]) < 340


def test_material_is_read_back_from_a_stored_verifier_record():
    session = CompletedSessionFactory(verdict="LOW_CONFID")

    recorded = composer_material_from_record(
        query=session.query, record=session.self_evaluation["verifier_evaluation"]
    )

    material = recorded.material
    assert [item["claim_id"] for item in material.confirmed_findings] == ["c1"]
    assert material.reasonable_inferences == []
    assert material.gaps == ["“内存升高由订单缓存泄漏引起”缺少直接证据"]
    assert material.allowed_actions == ["查询 order-service 的 GC 日志"]
    assert [claim.claim_id for claim in recorded.executor_output.claims] == ["c1", "c2"]
    assert recorded.verification.verdict == "LOW_CONFID"


UNREADABLE_RECORDS = {
    "missing": lambda record: None,
    "empty": lambda record: {},
    "not a dict": lambda record: "PASS",
    "only a verdict (older pipeline)": lambda record: {"verdict": "PASS", "groundedness_score": 1.0},
    "bad gatekeeper result": lambda record: record | {"gatekeeper_result": {"status": "pass"}},
    "bad claim": lambda record: record | {"executor_structured_output": {"claims": [{"claim_id": "c1"}]}},
}


@pytest.mark.parametrize("damage", UNREADABLE_RECORDS.values(), ids=UNREADABLE_RECORDS.keys())
def test_a_missing_or_unreadable_record_gives_no_material(damage):
    record = CompletedSessionFactory().self_evaluation["verifier_evaluation"]

    assert composer_material_from_record(query="q", record=damage(record)) is None


@pytest.mark.parametrize(
    ("answer", "states"),
    [
        ("checkout-api 的 QueueBacklogHigh 告警正在触发，当前 7420 条", True),
        ("当前积压 7,420 条。", True),
        ("（中文 Markdown 答案）", False),
        ("当前系统没有告警。", False),
    ],
)
def test_an_answer_states_a_finding_only_with_one_of_its_facts(answer, states):
    material = ComposerInput(
        query="checkout-api 有没有积压告警",
        confirmed_findings=[
            {
                "claim_id": "claim-1",
                "claim_text": "checkout-api 存在 QueueBacklogHigh 告警",
                "evidence": [
                    {"excerpt": "QueueBacklogHigh firing service=checkout-api 当前 7420 条", "source": "x"}
                ],
            }
        ],
        reasonable_inferences=[],
        gaps=[],
        allowed_actions=[],
    )

    assert states_confirmed_finding(answer, material) is states


def test_findings_without_any_fact_token_do_not_hold_an_answer_back():
    material = ComposerInput(
        query="q",
        confirmed_findings=[{"claim_id": "claim-1", "claim_text": "日志中出现了超时", "evidence": []}],
        reasonable_inferences=[],
        gaps=[],
        allowed_actions=[],
    )

    assert states_confirmed_finding("日志中出现了超时。", material) is True
