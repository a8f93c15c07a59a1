import pytest
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from diagnosis.models import DiagnosisSession
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue, rule_evaluation_run
from tests.factories import DiagnosisSessionFactory, ToolInvocationFactory

pytestmark = pytest.mark.django_db

SUPPORTED = {"evidence_status": "supported", "evidence_refs": [{"raw_path": "$.alerts[0]", "text": "..."}]}
FAILED = {"evidence_status": "failed", "evidence_refs": []}


def _completed_session(**kwargs) -> DiagnosisSession:
    return DiagnosisSessionFactory(status=DiagnosisSession.Status.COMPLETED, **kwargs)


def _knowledge_call(session, *, layers, success=True):
    details = {"evidence_status": "supported" if layers else "no_evidence", "retrieval_layers": layers}
    return ToolInvocationFactory(
        session=session, tool_name="lookup_knowledge", success=success, retrieval_details=details
    )


def _factor_names(evaluation: dict) -> list[str]:
    return [factor["name"] for factor in evaluation["factors"]]


def test_failed_session_scores_zero_whatever_its_tool_calls():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED)
    ToolInvocationFactory(session=session, retrieval_details=SUPPORTED)
    _knowledge_call(session, layers=["L0"])

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 0
    assert _factor_names(evaluation) == ["execution_failed"]


def test_session_without_tool_calls_scores_zero():
    session = _completed_session()

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 0
    assert _factor_names(evaluation) == ["no_tool_call"]


def test_helper_tool_calls_are_not_evidence_tool_calls():
    session = _completed_session()
    ToolInvocationFactory(
        session=session, tool_name="get_current_datetime", output={"now": "2026-11-29T15:00:00"}
    )

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert _factor_names(evaluation) == ["no_tool_call"]


def test_a_successful_tool_call_adds_30():
    session = _completed_session()
    ToolInvocationFactory(session=session, retrieval_details=SUPPORTED)
    ToolInvocationFactory(session=session, tool_name="query_logs", success=False, retrieval_details=FAILED)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 30
    assert evaluation["factors"] == [
        {"name": "has_successful_tool_call", "delta": 30, "detail": "2 次证据工具调用中 1 次成功"}
    ]


def test_an_l0_exact_match_adds_35_and_outranks_l1():
    session = _completed_session()
    _knowledge_call(session, layers=["L1"])
    _knowledge_call(session, layers=["L0", "L1"])

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 65
    assert _factor_names(evaluation) == ["has_successful_tool_call", "l0_exact_match"]


def test_an_l1_semantic_match_without_l0_adds_20():
    session = _completed_session()
    _knowledge_call(session, layers=["L1"])

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 50
    assert _factor_names(evaluation) == ["has_successful_tool_call", "l1_semantic_match"]


def test_retrieval_without_any_hit_subtracts_10():
    session = _completed_session()
    ToolInvocationFactory(session=session, retrieval_details=SUPPORTED)
    _knowledge_call(session, layers=[])

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["evidence_score"] == 20
    assert _factor_names(evaluation) == ["has_successful_tool_call", "retrieval_no_hit"]


def test_no_retrieval_call_means_no_retrieval_factor():
    session = _completed_session()
    ToolInvocationFactory(session=session, retrieval_details=SUPPORTED)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert _factor_names(evaluation) == ["has_successful_tool_call"]


def test_all_tool_calls_failed_subtracts_20():
    session = _completed_session()
    ToolInvocationFactory(session=session, success=False, retrieval_details=FAILED)
    ToolInvocationFactory(session=session, tool_name="query_logs", success=False, retrieval_details=FAILED)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert evaluation["factors"] == [
        {"name": "all_tool_calls_failed", "delta": -20, "detail": "2 次证据工具调用全部失败"}
    ]


def test_score_is_clamped_at_zero():
    session = _completed_session()
    ToolInvocationFactory(session=session, success=False, retrieval_details=FAILED)
    _knowledge_call(session, layers=[], success=False)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert sum(factor["delta"] for factor in evaluation["factors"]) == -30
    assert evaluation["evidence_score"] == 0


def test_a_call_to_an_unknown_tool_counts_as_a_failed_evidence_call():
    session = _completed_session()
    ToolInvocationFactory(session=session, tool_name="query_tracing", success=False, retrieval_details=FAILED)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert _factor_names(evaluation) == ["all_tool_calls_failed"]


def test_evaluation_is_stored_in_the_rule_slot_beside_the_verifier_slot():
    session = _completed_session(self_evaluation={"verifier_evaluation": {"verdict": "PASS"}})
    _knowledge_call(session, layers=["L0"])

    evaluation = rule_evaluation_run(session_pk=session.pk)

    session.refresh_from_db()
    assert evaluation["source"] == "rule"
    assert session.self_evaluation == {
        "verifier_evaluation": {"verdict": "PASS"},
        "rule_evaluation": evaluation,
    }


def test_enqueue_queues_the_task_once_the_transaction_commits(django_capture_on_commit_callbacks):
    session = _completed_session()

    with django_capture_on_commit_callbacks(execute=True):
        rule_evaluation_enqueue(session_pk=session.pk)
        assert not OrmQ.objects.exists()

    task = SignedPackage.loads(OrmQ.objects.get().payload)
    assert (task["func"], task["args"]) == ("diagnosis.tasks.rule_evaluation_task", (session.pk, 1))


def _pass_record(*, invocation, claim_text: str) -> dict:
    """A PASS round record whose one kept claim cites the invocation's first alert."""
    claim = {
        "claim_id": "claim-1",
        "claim_type": "observation",
        "claim_text": claim_text,
        "evidence_bindings": [
            {
                "tool_name": "query_alerts",
                "source_invocation_id": invocation.pk,
                "raw_path": "$.alerts[0]",
                "evidence_excerpt": claim_text,
            }
        ],
    }
    output = {
        "claims": [claim],
        "hypotheses": [],
        "missing_info": [],
        "recommended_actions": [],
        "diagnosis_summary": "",
        "user_facing_answer": "",
    }
    inventory = {"services": ["order-service", "payment-service"], "alerts": ["HighCPUUsage"], "runbooks": []}
    return {
        "verdict": "PASS",
        "executor_structured_output": output,
        "excluded_topics": [],
        "inventory": inventory,
    }


@pytest.mark.parametrize(("service", "off_topic"), [("payment-service", True), ("order-service", False)])
def test_a_pass_about_a_service_the_question_did_not_ask_scores_zero(service, off_topic):
    from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION
    from diagnosis.services.self_evaluation import self_evaluation_merge

    session = _completed_session(query="order-service 有什么异常")
    alert = {
        "alert_name": "HighCPUUsage",
        "service": service,
        "state": "firing",
        "labels": {"service": service},
    }
    invocation = ToolInvocationFactory(
        session=session, output={"success": True, "alerts": [alert]}, retrieval_details=SUPPORTED
    )
    record = _pass_record(invocation=invocation, claim_text=f"{service} 当前存在 HighCPUUsage 告警")
    self_evaluation_merge(session_pk=session.pk, slot=VERIFIER_EVALUATION, value=record)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert ("off_topic_pass" in _factor_names(evaluation)) is off_topic
    assert (evaluation["evidence_score"] == 0) is off_topic


@pytest.mark.parametrize("filled", [True, False])
def test_a_pass_with_an_ask_left_unanswered_scores_zero(filled):
    from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION
    from diagnosis.services.self_evaluation import self_evaluation_merge

    session = _completed_session(query="order-service 的 CPU 当前值是多少")
    invocation = ToolInvocationFactory(
        session=session, output={"success": True, "alerts": []}, retrieval_details=SUPPORTED
    )
    ask = {
        "kind": "value",
        "subject": "order-service",
        "subject_kind": "service",
        "window": {"minutes": 45, "label": "最近 45 分钟"},
    }
    slot = {
        "ask": ask,
        "filled": filled,
        "conclusion": "order-service CPU 92%" if filled else "",
        "why": "无数据",
    }
    record = _pass_record(invocation=invocation, claim_text="order-service CPU 92%") | {"slots": [slot]}
    self_evaluation_merge(session_pk=session.pk, slot=VERIFIER_EVALUATION, value=record)

    evaluation = rule_evaluation_run(session_pk=session.pk)

    assert ("unanswered_pass" in _factor_names(evaluation)) is not filled
    assert (evaluation["evidence_score"] == 0) is not filled
