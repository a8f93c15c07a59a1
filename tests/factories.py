"""Factories for the project's models; tests build records through these, never by hand."""

import factory
from django.contrib.auth import get_user_model

from caselib.models import CaseLibrary
from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import EvidenceBinding
from diagnosis.pipeline.records import RoundRecord, VerifierEvaluation
from diagnosis.services.reviewers import reviewer_group_ensure


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"engineer{n}")
    password = factory.django.Password("pw-for-tests-123")


class StaffUserFactory(UserFactory):
    """A staff flag and no permissions: it opens the admin's door and reads nothing by itself."""

    username = factory.Sequence(lambda n: f"staff{n}")
    is_staff = True


class ReviewerFactory(StaffUserFactory):
    """A member of the reviewers group (`reviewer_group_ensure`): reads every session, reviews."""

    class Meta:
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"reviewer{n}")

    @factory.post_generation
    def reviewers_group(user, create, extracted, **kwargs):
        if create:
            user.groups.add(reviewer_group_ensure())


class DiagnosisSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DiagnosisSession

    session_id = factory.Sequence(lambda n: f"session-{n}")
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警"
    owner = factory.SubFactory(UserFactory)


class AgentStepFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentStep

    session = factory.SubFactory(DiagnosisSessionFactory)
    agent = AgentStep.Agent.PLANNER


class ToolInvocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolInvocation

    session = factory.SubFactory(DiagnosisSessionFactory)
    tool_name = "query_alerts"
    input = factory.LazyFunction(dict)
    output = factory.LazyFunction(lambda: {"success": True, "alerts": [], "message": ""})
    retrieval_details = factory.LazyFunction(lambda: {"evidence_status": "no_evidence", "evidence_refs": []})


class CaseLibraryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CaseLibrary

    diagnosis_id = factory.Sequence(lambda n: f"session-{n}")
    title = "order-service HighMemoryUsage"
    # Most tests look at cases the library serves; candidates are asked for by name.
    status = CaseLibrary.Status.APPROVED


# --- Completed sessions with realistic verifier records (web / API / admin / case library tests) ---

MEMORY_ALERT_DESCRIPTION = (
    "内存使用率持续超过85%，当前 91%，JVM堆内存 3.8GB/4GB，pod pod-order-service-5c7d8e9f1-m3n2p"
)
MEMORY_ALERT_TEXT = f"HighMemoryUsage firing service=order-service: {MEMORY_ALERT_DESCRIPTION} duration=15m"
HIKARI_LOG_TEXT = (
    "[2026-11-29 14:52:00][ERROR][order-service] HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms"
)


class AlertInvocationFactory(ToolInvocationFactory):
    """query_alerts(service=order-service, alert_name=HighMemoryUsage) on the demo world."""

    tool_name = "query_alerts"
    input = factory.LazyFunction(lambda: {"service": "order-service", "alert_name": "HighMemoryUsage"})
    output = factory.LazyFunction(
        lambda: {
            "success": True,
            "alerts": [
                {
                    "alert_name": "HighMemoryUsage",
                    "service": "order-service",
                    "state": "firing",
                    "description": MEMORY_ALERT_DESCRIPTION,
                    "active_at": "2026-11-29T14:45:00+08:00",
                    "duration": "15m",
                }
            ],
            "message": "找到 1 条告警",
        }
    )
    retrieval_details = factory.LazyFunction(
        lambda: {
            "evidence_status": "supported",
            "evidence_refs": [{"raw_path": "$.alerts[0]", "text": MEMORY_ALERT_TEXT}],
        }
    )
    latency_ms = 4


class HikariLogInvocationFactory(ToolInvocationFactory):
    """query_logs on order-service's connection pool."""

    tool_name = "query_logs"
    input = factory.LazyFunction(lambda: {"query": "HikariCP 连接池", "service": "order-service"})
    output = factory.LazyFunction(
        lambda: {
            "success": True,
            "logs": [
                {
                    "timestamp": "2026-11-29T14:52:00+08:00",
                    "level": "ERROR",
                    "service": "order-service",
                    "instance": "pod-order-service-5c7d8e9f1-m3n2p",
                    "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms",
                    "metrics": {},
                }
            ],
            "total": 1,
            "message": "找到 1 条日志",
        }
    )
    retrieval_details = factory.LazyFunction(
        lambda: {
            "evidence_status": "supported",
            "evidence_refs": [{"raw_path": "$.logs[0]", "text": HIKARI_LOG_TEXT}],
        }
    )
    latency_ms = 6


CLAIM_CLASSES = {
    # verdict → the verifier's class of claim c1 and, for LOW_CONFID, of the root-cause claim c2
    "PASS": ("direct_observation",),
    "LOW_CONFID": ("direct_observation", "unsupported"),
    "REJECT": ("contradicted",),
}
FACT_CLASSES = {
    "direct_observation": "direct_evidence",
    "unsupported": "no_evidence",
    "contradicted": "contradicted",
}


def verifier_evaluation_build(*, invocation: ToolInvocation, verdict: str = "PASS", round: int = 1) -> dict:
    """A `verifier_evaluation` record as the orchestrator writes it, citing `invocation`:
    validated by the pipeline's own `VerifierEvaluation` model, so it has the shape production writes.

    PASS: one observation whose excerpt is in the record, seen directly. LOW_CONFID: plus a
    root-cause claim the verifier finds unsupported. REJECT: the excerpt was fabricated (97% where
    the record says 91%), the gatekeeper rejects and the claim counts as contradicted.
    """
    ref = invocation.retrieval_details["evidence_refs"][0]
    rejected = verdict == "REJECT"
    excerpt = "当前 97%" if rejected else "HighMemoryUsage firing service=order-service"
    binding = {
        "tool_name": invocation.tool_name,
        "source_invocation_id": invocation.pk,
        "raw_path": ref["raw_path"],
        "evidence_excerpt": excerpt,
    }
    texts = [
        "order-service 存在 firing 状态的 HighMemoryUsage 告警，内存使用率当前 91%",
        "内存升高由订单缓存泄漏引起",
    ]
    classes = CLAIM_CLASSES[verdict]
    claims = [
        {
            "claim_id": f"c{number}",
            "claim_type": "observation" if number == 1 else "root_cause",
            "claim_text": texts[number - 1],
            "evidence_bindings": [binding],
        }
        for number in range(1, len(classes) + 1)
    ]
    checked = [
        {
            "claim_id": claim["claim_id"],
            **binding,
            "status": "fail" if rejected else "pass",
            "rule": "evidence.excerpt_mismatch" if rejected else None,
            "matched_text": None if rejected else excerpt,
            "similarity": 0.41 if rejected else 1.0,
        }
        for claim in claims
    ]
    claim_checks = [
        {
            "claim_id": claim["claim_id"],
            "verification": verification,
            "detail": {"direct_observation": "告警记录直接给出", "unsupported": "没有证据显示缓存泄漏"}.get(
                verification, "引用核验判定为伪造或不匹配的证据（evidence.excerpt_mismatch）"
            ),
            "evidence_refs": [ref["raw_path"]] if verification == "direct_observation" else [],
            "grounding_reason": "",
        }
        for claim, verification in zip(claims, classes, strict=True)
    ]
    facts = [
        {
            "fact": claim["claim_text"],
            "is_critical": True,
            "verification": FACT_CLASSES[check["verification"]],
            "detail": check["detail"],
            "evidence_refs": check["evidence_refs"],
        }
        for claim, check in zip(claims, claim_checks, strict=True)
    ]
    record = {
        "verdict": verdict,
        "groundedness_score": {"PASS": 1.0, "LOW_CONFID": 0.5, "REJECT": 0.0}[verdict],
        "critical_fact_count": len(facts),
        "claim_checks": claim_checks,
        "facts_checked": facts,
        "rationale": {
            "PASS": "关键事实均有直接证据",
            "LOW_CONFID": "根因断言缺少证据",
            "REJECT": "引用摘录与工具输出不符",
        }[verdict],
        "gaps": ["“内存升高由订单缓存泄漏引起”缺少直接证据"] if verdict == "LOW_CONFID" else [],
        "overrides": [],
        "round": round,
        "traceability_version": "v1",
        "engine": "rules",
        "planner_output": {
            "goal": "确认 order-service 的 HighMemoryUsage 告警",
            "steps": [{"tool": "query_alerts", "purpose": "确认相关告警是否处于 firing 状态"}],
            "narrow_scope": True,
            "focus": ["order-service", "HighMemoryUsage"],
            "excluded_topics": [],
        },
        "executor_output_parse_status": {"status": "valid", "detail": ""},
        "excluded_topics": [],
        "executor_structured_output": {
            "answer_version": "executor_evidence_v2",
            "claims": claims,
            "hypotheses": ["JVM 堆内存可能不足"],
            "missing_info": ["GC 日志"],
            "recommended_actions": ["查询 order-service 的 GC 日志", "重启 order-service"],
            "diagnosis_summary": "order-service 内存告警触发",
            "user_facing_answer": "order-service 存在 HighMemoryUsage 告警。",
        },
        "blocked_claims": [],
        "gatekeeper_result": {
            "status": "fail" if rejected else "pass",
            "severity": "reject" if rejected else "none",
            "checked_bindings": checked,
            "failed_rules": ["evidence.excerpt_mismatch"] if rejected else [],
            "warnings": [],
            "errors": [{"rule": "evidence.excerpt_mismatch", "message": "摘录与证据不符", "claim_id": "c1"}]
            if rejected
            else [],
        },
        "composer_output": {"status": "skipped", "detail": "DEGRADED 输出由代码模板生成"}
        if rejected
        else {"status": "valid", "answer": SESSION_ANSWERS[verdict], "offending_tokens": []},
        "tool_trace_summary": [
            {
                "trace_ref": "t1",
                "tool_name": invocation.tool_name,
                "source_invocation_ids": [invocation.pk],
                "evidence_level": "direct",
                "output_summary": ref["text"],
                "invocation_count": 1,
                "no_hit_invocation_count": 0,
            }
        ],
        "retry_context": None,
        "route": OUTPUT_TYPES[verdict].value,
        "output_type": OUTPUT_TYPES[verdict].value,
    }
    return VerifierEvaluation.model_validate(record).model_dump(mode="json")


SESSION_ANSWERS = {
    "PASS": "## 结论\n- order-service 存在 **HighMemoryUsage** 告警（firing），内存使用率当前 91%。",
    "LOW_CONFID": "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。\n\n"
    "- order-service 存在 HighMemoryUsage 告警。\n\n当前缺口：\n- 订单缓存泄漏",
    "REJECT": "当前无法基于已获取证据生成可靠结论，建议人工介入。\n已确认信息：\n- 无\n"
    "证据缺口：\n- 引用摘录与工具输出不符\n建议下一步：\n- 人工核对告警",
}
OUTPUT_TYPES = {
    "PASS": DiagnosisSession.OutputType.NORMAL,
    "LOW_CONFID": DiagnosisSession.OutputType.LOW_CONFID_WITH_DISCLAIMER,
    "REJECT": DiagnosisSession.OutputType.DEGRADED,
}


class CompletedSessionFactory(DiagnosisSessionFactory):
    """A finished session with one alert invocation, five steps and its verifier record.

    `verdict` picks the route (PASS → NORMAL, LOW_CONFID → disclaimer, REJECT → DEGRADED);
    `retried=True` adds a LOW_CONFID first round kept under `verifier_evaluation["rounds"]`.
    """

    class Meta:
        skip_postgeneration_save = True

    class Params:
        verdict = "PASS"
        retried = False

    status = DiagnosisSession.Status.COMPLETED
    current_stage = "done"
    rounds = factory.LazyAttribute(lambda session: 2 if session.retried else 1)
    output_type = factory.LazyAttribute(lambda session: OUTPUT_TYPES[session.verdict])
    answer = factory.LazyAttribute(lambda session: SESSION_ANSWERS[session.verdict])

    @factory.post_generation
    def evidence(session, create, extracted, **kwargs):
        if not create:
            return
        verdict = _verdict_of(session)
        last_round = session.rounds
        invocation = AlertInvocationFactory(session=session, round=1)
        rounds = []
        if last_round == 2:
            first = verifier_evaluation_build(invocation=invocation, verdict="LOW_CONFID", round=1)
            first.pop("composer_output")
            first.pop("output_type")
            rounds.append(first | {"route": "RETRY"})
        latest = verifier_evaluation_build(invocation=invocation, verdict=verdict, round=last_round)
        if rounds:
            latest["retry_context"] = {
                "round": 1,
                "missing_evidence_facts": ["订单缓存泄漏"],
                "instruction": "仅补充以上断言相关证据，不要重复已完成检索",
            }
            final_round = {key: value for key, value in latest.items() if key in RoundRecord.model_fields}
            latest["rounds"] = [*rounds, final_round]
            latest = VerifierEvaluation.model_validate(latest).model_dump(mode="json")
        for round_number in range(1, last_round + 1):
            for agent, _label in AgentStep.Agent.choices:
                skipped = verdict == "REJECT" and agent in ("verifier", "composer")
                AgentStepFactory(
                    session=session,
                    round=round_number,
                    agent=agent,
                    status=AgentStep.Status.SKIPPED if skipped else AgentStep.Status.OK,
                    latency_ms=12,
                )
        session.self_evaluation = {
            "verifier_evaluation": latest,
            "rule_evaluation": {
                "evidence_score": 65,
                "source": "rule",
                "factors": [
                    {"name": "has_successful_tool_call", "delta": 30},
                    {"name": "l0_exact_match", "delta": 35},
                ],
            },
        }
        session.verdict = verdict
        session.groundedness_score = latest["groundedness_score"]
        session.gatekeeper_severity = latest["gatekeeper_result"]["severity"]
        session.save()


def claim_blocked(session: DiagnosisSession, *, claim_id: str, rule: str) -> None:
    """Record a claim of a factory session as a guard records one it blocked: out of the judged
    output, in `blocked_claims`, with the guard's warning."""
    evaluation = session.self_evaluation["verifier_evaluation"]
    claims = evaluation["executor_structured_output"]["claims"]
    evaluation["blocked_claims"] = [claim for claim in claims if claim["claim_id"] == claim_id]
    claims[:] = [claim for claim in claims if claim["claim_id"] != claim_id]
    evaluation["claim_checks"] = [c for c in evaluation["claim_checks"] if c["claim_id"] != claim_id]
    evaluation["gatekeeper_result"]["warnings"].append(
        {"rule": rule, "message": "断言已拦截，不参与校验与撰写", "claim_id": claim_id}
    )
    session.save()


def _verdict_of(session: DiagnosisSession) -> str:
    return {output_type: verdict for verdict, output_type in OUTPUT_TYPES.items()}[session.output_type]


def recorded_invocation(session, tool_name, raw_path, text, **fields):
    """A recorded tool call with one evidence ref, as the recorder would extract it."""
    details = {"evidence_status": "supported", "evidence_refs": [{"raw_path": raw_path, "text": text}]}
    return ToolInvocationFactory(session=session, tool_name=tool_name, retrieval_details=details, **fields)


def binding_for(invocation, excerpt=None):
    """An evidence binding that cites the invocation's first ref exactly (or with `excerpt`)."""
    ref = invocation.retrieval_details["evidence_refs"][0]
    return EvidenceBinding(
        tool_name=invocation.tool_name,
        source_invocation_id=invocation.pk,
        raw_path=ref["raw_path"],
        evidence_excerpt=excerpt or ref["text"],
    )
