import pytest

from diagnosis.engines.rules.verifier import verify_by_rules
from diagnosis.pipeline.claims_under_check import claims_under_check
from diagnosis.pipeline.contracts import (
    Claim,
    ClaimCheck,
    ExecutorOutput,
    FactCheck,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.focus import QuestionFocus
from diagnosis.pipeline.gatekeeper import gatekeep
from diagnosis.pipeline.guards import RoundContext, verdict_capped
from diagnosis.pipeline.verdict import (
    grounding_check,
    verdict_compute,
    verification_finalize,
    verifier_output_for_gatekeeper_reject,
)
from tests.diagnosis.pipeline.support import DEMO_WORLD
from tests.factories import (
    HIKARI_LOG_TEXT,
    binding_for,
    recorded_invocation,
)
from tools.evidence.tool import guidance_tool_names

pytestmark = pytest.mark.django_db

DIR, IND, NOE, CON = "direct_evidence", "indirect_support", "no_evidence", "contradicted"
NO_HIT_TEXT = "query_logs(query=连接池, service=inventory-service) 未检索到匹配证据"
RUNBOOK_TEXT = (
    "HikariCP 数据库连接池耗尽处置手册（hikaricp-connection-pool.md）: 连接池统计中 active 等于最大连接数、"
    "idle=0、waiting 大于 0，说明连接池已耗尽"
)


@pytest.mark.parametrize(
    ("classes", "verdict", "score"),
    [
        ((), "LOW_CONFID", 0.0),
        ((DIR,), "PASS", 1.0),
        ((IND,), "LOW_CONFID", 0.6),
        ((NOE,), "LOW_CONFID", 0.0),
        ((CON,), "REJECT", 0.0),
        ((DIR, DIR), "PASS", 1.0),
        ((DIR, IND), "PASS", 0.8),
        ((DIR, NOE), "LOW_CONFID", 0.5),
        ((DIR, CON), "REJECT", 0.0),
        ((IND, IND), "LOW_CONFID", 0.6),
        ((IND, NOE), "LOW_CONFID", 0.3),
        ((IND, CON), "REJECT", 0.0),
        ((NOE, NOE), "LOW_CONFID", 0.0),
        ((NOE, CON), "REJECT", 0.0),
        ((CON, CON), "REJECT", 0.0),
        ((DIR, IND, IND), "PASS", 0.733),
        ((DIR, DIR, NOE), "LOW_CONFID", 0.667),
        ((DIR, IND, NOE), "LOW_CONFID", 0.533),
        ((DIR, DIR, DIR, CON), "REJECT", 0.0),
    ],
)
def test_verdict_matrix_and_score(classes, verdict, score):
    assert verdict_compute(classes) == (verdict, score)


# --- A session with real recorded invocations, checked by the real gatekeeper. ---


def executor_output(*claims):
    return ExecutorOutput(
        claims=[
            Claim(claim_id=f"claim-{i}", claim_type=claim_type, claim_text=text, evidence_bindings=bindings)
            for i, (claim_type, text, bindings) in enumerate(claims, start=1)
        ],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )


def verifier_says(*verifications, verdict="PASS", score=1.0, facts=()):
    return VerifierOutput(
        claim_checks=[
            ClaimCheck(claim_id=f"claim-{i}", verification=v, detail="模型判断", evidence_refs=[])
            for i, v in enumerate(verifications, start=1)
        ],
        facts_checked=list(facts),
        rationale="模型理由",
        verdict=verdict,
        groundedness_score=score,
    )


def finalize(output, verifier_output, invocations):
    """The verdict as a round computes it: the matrix over the claim checks, then the verdict guards."""
    result = gatekeep(executor_output=output, invocations=[i.tool_result() for i in invocations])
    verification = verification_finalize(
        verifier_output=verifier_output,
        executor_output=output,
        gatekeeper_result=result,
        guidance_tools=guidance_tool_names(),
    )
    context = RoundContext(
        query="",
        focus=QuestionFocus(),
        excluded_topics=[],
        world=DEMO_WORLD,
        invocations=[i.tool_result() for i in invocations],
    )
    return verdict_capped(verification, gatekeeper_result=result, context=context)


def test_a_grounded_direct_observation_passes(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警，内存使用率 91%", [binding_for(alert)])
    )

    verification = finalize(output, verifier_says("direct_observation"), [alert])

    assert (verification.verdict, verification.groundedness_score, verification.critical_fact_count) == (
        "PASS",
        1.0,
        1,
    )
    assert verification.overrides == [] and verification.gaps == []


def test_a_lenient_verifier_cannot_pass_a_claim_that_changed_91_into_97(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警，内存使用率 97%", [binding_for(alert)])
    )

    verification = finalize(output, verifier_says("direct_observation", verdict="PASS", score=1.0), [alert])

    assert (verification.verdict, verification.groundedness_score) == ("LOW_CONFID", 0.0)
    [check] = verification.claim_checks
    assert check.verification == "unsupported" and "97%" in check.grounding_reason
    assert {o.subject for o in verification.overrides} == {"claim-1", "verdict", "groundedness_score"}
    assert "97%" not in verification.gaps[0] and "〔未核验〕" in verification.gaps[0]


def test_a_number_cut_short_in_the_excerpt_cannot_ground_a_claim(session):
    log = recorded_invocation(
        session,
        "query_logs",
        "$.logs[0]",
        "[2026-11-29 14:59:00][WARN][order-service] 内存使用率过高: 91.0%, GC次数: 128",
    )
    truncated = binding_for(
        log, excerpt="[2026-11-29 14:59:00][WARN][order-service] 内存使用率过高: 91.0%, GC次数: 12"
    )
    output = executor_output(("observation", "order-service 最新 GC次数为 12", [truncated]))

    verification = finalize(output, verifier_says("direct_observation", verdict="PASS", score=1.0), [log])

    assert verification.verdict == "LOW_CONFID"
    assert verification.claim_checks[0].verification == "unsupported"


def test_grounding_check_names_the_missing_fact_tokens_per_claim(alert):
    output = executor_output(
        (
            "observation",
            "order-service 存在 HighMemoryUsage 告警，JVM 堆内存 3.8GB/4GB",
            [binding_for(alert)],
        ),
        ("observation", "payment-service 存在 HighMemoryUsage 告警", [binding_for(alert)]),
        ("observation", "order-service 内存很高", []),
    )
    result = gatekeep(executor_output=output, invocations=[alert.tool_result()])

    reasons = grounding_check(executor_output=output, gatekeeper_result=result)

    assert set(reasons) == {"claim-2", "claim-3"}
    assert "payment-service" in reasons["claim-2"]
    assert reasons["claim-3"] == "没有通过引用核验的证据"


def test_a_missing_claim_check_counts_as_unsupported(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)]),
        ("observation", "order-service 内存使用率 91%", [binding_for(alert)]),
    )

    verification = finalize(output, verifier_says("direct_observation"), [alert])

    assert (verification.verdict, verification.groundedness_score) == ("LOW_CONFID", 0.5)
    assert verification.claim_checks[1].verification == "unsupported"
    assert any(o.subject == "claim-2" and o.model is None for o in verification.overrides)


def test_the_models_own_verdict_and_score_are_ignored(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)])
    )

    verification = finalize(output, verifier_says("direct_observation", verdict="REJECT", score=0.1), [alert])

    assert (verification.verdict, verification.groundedness_score) == ("PASS", 1.0)
    assert [(o.subject, o.model, o.code) for o in verification.overrides] == [
        ("verdict", "REJECT", "PASS"),
        ("groundedness_score", "0.1", "1.0"),
    ]


def test_a_verifier_saying_pass_over_a_contradicted_claim_is_overridden(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)])
    )

    verification = finalize(output, verifier_says("contradicted", verdict="PASS", score=1.0), [alert])

    assert (verification.verdict, verification.groundedness_score) == ("REJECT", 0.0)


def test_a_critical_contradiction_the_model_found_beyond_the_claims_rejects(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)])
    )
    contradiction = FactCheck(
        fact="根因已确认", is_critical=True, verification=CON, detail="答案编造", evidence_refs=[]
    )

    verification = finalize(output, verifier_says("direct_observation", facts=[contradiction]), [alert])

    assert verification.verdict == "REJECT"


def test_external_unknown_counts_as_contradicted(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)])
    )

    verification = finalize(output, verifier_says("external_unknown"), [alert])

    assert (verification.verdict, verification.facts_checked[0].verification) == ("REJECT", CON)


def test_gatekeeper_low_confid_caps_a_pass_at_low_confid_and_keeps_the_score(alert):
    claim_text = "order-service 当前存在 HighMemoryUsage 告警"
    output = executor_output(("observation", claim_text, [binding_for(alert), binding_for(alert, "firing")]))

    verification = finalize(output, verifier_says("direct_observation"), [alert])

    assert (verification.verdict, verification.groundedness_score) == ("LOW_CONFID", 1.0)
    assert any(o.subject == "verdict" and "low_confid" in o.reason for o in verification.overrides)


def test_gatekeeper_reject_skips_the_model_and_rejects(alert):
    output = executor_output(
        ("observation", "order-service 内存使用率 97%", [binding_for(alert, "当前 97%")]),
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)]),
    )
    result = gatekeep(executor_output=output, invocations=[alert.tool_result()])

    verifier_output = verifier_output_for_gatekeeper_reject(executor_output=output, gatekeeper_result=result)
    verification = verification_finalize(
        verifier_output=verifier_output,
        executor_output=output,
        gatekeeper_result=result,
        guidance_tools=guidance_tool_names(),
    )

    assert [c.verification for c in verifier_output.claim_checks] == ["contradicted", "unsupported"]
    assert "evidence.excerpt_mismatch" in verifier_output.claim_checks[0].detail
    assert (verification.verdict, verification.groundedness_score) == ("REJECT", 0.0)


def test_gaps_name_the_facts_without_direct_evidence(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert)]),
        ("root_cause", "order-service 内存升高由订单缓存引起", [binding_for(alert)]),
        ("observation", "order-service 内存泄漏已确认", [binding_for(alert)]),
    )

    verification = finalize(
        output, verifier_says("direct_observation", "reasonable_inference", "unsupported"), [alert]
    )

    assert verification.gaps == [
        "“order-service 内存升高由订单缓存引起”只有间接支持，缺少直接证据",
        "“order-service 内存泄漏已确认”缺少直接证据",
    ]
    assert (verification.verdict, verification.groundedness_score) == ("LOW_CONFID", 0.533)


# --- The rules engine's verifier ---


def verify_rules(output, invocations):
    result = gatekeep(executor_output=output, invocations=[i.tool_result() for i in invocations])
    stage_input = VerifierInput(
        original_query="order-service 是否存在告警",
        executor_structured_output=output.model_dump(),
        gatekeeper_result=result.model_dump(),
        tool_trace_summary=[],
        executor_output_parse_status={"status": "valid", "detail": ""},
        claims=claims_under_check(executor_output=output, gatekeeper_result=result),
    )
    return [(c.verification, c.detail) for c in verify_by_rules(stage_input).claim_checks]


def test_rules_verifier_takes_a_grounded_observation_as_direct(alert):
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警，当前 91%", [binding_for(alert)])
    )

    [(verification, _)] = verify_rules(output, [alert])

    assert verification == "direct_observation"


def test_rules_verifier_takes_root_causes_and_risks_as_inferences(alert):
    output = executor_output(
        ("root_cause", "order-service JVM 堆内存 3.8GB/4GB 接近上限", [binding_for(alert)]),
        ("risk", "order-service 可能继续触发 HighMemoryUsage", [binding_for(alert)]),
    )

    assert [v for v, _ in verify_rules(output, [alert])] == ["reasonable_inference", "reasonable_inference"]


def test_rules_verifier_treats_no_hits_honestly(session):
    no_hit = recorded_invocation(session, "query_logs", "$.no_evidence", NO_HIT_TEXT)
    output = executor_output(
        ("negative_observation", NO_HIT_TEXT, [binding_for(no_hit)]),
        ("negative_observation", "已排除 inventory-service 的连接池问题", [binding_for(no_hit)]),
        ("observation", "inventory-service 存在连接池耗尽", [binding_for(no_hit)]),
    )

    assert [v for v, _ in verify_rules(output, [no_hit])] == [
        "direct_observation",
        "overstated",
        "unsupported",
    ]


def test_rules_verifier_never_takes_a_runbook_as_a_current_fact(session):
    runbook = recorded_invocation(session, "lookup_knowledge", "$.evidence_blocks[0]", RUNBOOK_TEXT)
    output = executor_output(("observation", "HikariCP 连接池已耗尽", [binding_for(runbook)]))

    [(verification, detail)] = verify_rules(output, [runbook])

    assert verification == "reasonable_inference" and "手册" in detail


def test_rules_verifier_rejects_claims_without_passing_evidence(session, alert):
    log = recorded_invocation(session, "query_logs", "$.logs[0]", HIKARI_LOG_TEXT)
    output = executor_output(
        ("observation", "order-service 当前存在 HighMemoryUsage 告警", [binding_for(alert, "firing")]),
        (
            "observation",
            "order-service 当前存在 HighMemoryUsage 告警（firing）",
            [binding_for(alert), binding_for(log, "firing")],
        ),
        ("observation", "order-service 内存使用率 97%", [binding_for(alert)]),
    )

    assert [v for v, _ in verify_rules(output, [alert, log])] == [
        "unsupported",
        "reasonable_inference",
        "unsupported",
    ]
