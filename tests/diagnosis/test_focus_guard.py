"""The focus guard (`scope.out_of_focus`): claims about subjects the question did not ask are blocked."""

from __future__ import annotations

from diagnosis.pipeline.contracts import Claim, EvidenceBinding, ExecutorOutput
from diagnosis.pipeline.focus import Inventory, question_focus
from diagnosis.pipeline.scope import FOCUS_RULE, out_of_focus, record_subjects
from tools.evidence.registry import kind_named
from tools.evidence.result import ToolResult
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

VOCABULARY = vocabulary_load(DEFAULT_VOCABULARY_FILE)
INVENTORY = Inventory.build(
    services=["payment-service", "order-service"],
    alerts=["HighCPUUsage", "HighMemoryUsage"],
    vocabulary=VOCABULARY,
)


ALERTS = ToolResult.from_stored(
    tool_name="query_alerts",
    kind=kind_named("query_alerts"),
    invocation_id=1,
    arguments={},
    success=True,
    output={
        "alerts": [
            {"alert_name": "HighCPUUsage", "service": "payment-service"},
            {"alert_name": "HighMemoryUsage", "service": "order-service"},
        ]
    },
    retrieval_details={
        "evidence_refs": [
            {"raw_path": "$.alerts[0]", "text": "HighCPUUsage"},
            {"raw_path": "$.alerts[1]", "text": "HighMemoryUsage"},
        ]
    },
)


def claim(claim_id, text, raw_path):
    binding = EvidenceBinding(
        tool_name="query_alerts", source_invocation_id=1, raw_path=raw_path, evidence_excerpt=text
    )
    return Claim(claim_id=claim_id, claim_type="observation", claim_text=text, evidence_bindings=[binding])


def guard(query):
    output = ExecutorOutput(
        claims=[
            claim("c1", "payment-service HighCPUUsage", "$.alerts[0]"),
            claim("c2", "order-service HighMemoryUsage", "$.alerts[1]"),
        ],
        hypotheses=[],
        missing_info=[],
        recommended_actions=[],
        diagnosis_summary="",
        user_facing_answer="",
    )
    focus = question_focus(query=query, inventory=INVENTORY, vocabulary=VOCABULARY)
    subjects = record_subjects(
        invocations=[ALERTS], inventory=INVENTORY, service_labels=("service", "app", "job")
    )
    return out_of_focus(executor_output=output, focus=focus, subjects=subjects, inventory=INVENTORY)


def test_a_claim_about_another_service_is_blocked():
    result = guard("只确认 order-service 是否存在告警")

    assert [c.claim_id for c in result.kept_output.claims] == ["c2"]
    assert {w.rule for w in result.warnings} == {FOCUS_RULE}


def test_an_alert_asked_on_another_service_keeps_nothing():
    result = guard("只确认 order-service 是否存在 HighCPUUsage 告警")

    assert result.kept_output.claims == []


def test_what_is_firing_has_every_alert_in_focus():
    result = guard("现在有哪些告警")

    assert len(result.kept_output.claims) == 2 and result.warnings == []


def test_nothing_understood_keeps_no_claim():
    assert guard("asdf qwer").kept_output.claims == []
