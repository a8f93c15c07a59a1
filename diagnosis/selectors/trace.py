"""The trace JSON of one session (contracts §10, seed 004 §9): served by the API and `diagnose --json`.

Plain JSON types only (timestamps as ISO 8601 strings) so callers can `json.dumps` it as is.
Two queries whatever the session's size: its steps and its invocations (none if prefetched).
"""

from __future__ import annotations

from datetime import datetime

from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.selectors.aiops import aiops_summary
from diagnosis.selectors.self_evaluation import AIOPS_RULE_EVALUATION, VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.selectors.sessions import session_get


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _step(step: AgentStep) -> dict:
    return {
        "id": step.pk,
        "round": step.round,
        "agent": step.agent,
        "status": step.status,
        "thought": step.thought,
        "model_output": step.model_output,
        "latency_ms": step.latency_ms,
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "llm_calls": step.llm_calls,
        "prompt_version": step.prompt_version,
        "created_at": _iso(step.created_at),
    }


def _invocation(invocation: ToolInvocation) -> dict:
    return {
        "id": invocation.pk,
        "round": invocation.round,
        "tool_name": invocation.tool_name,
        "source": invocation.source,
        "source_location": invocation.source_location,
        "input": invocation.input,
        "success": invocation.success,
        "evidence_status": invocation.evidence_status,
        "retrieval_details": invocation.retrieval_details,
        "latency_ms": invocation.latency_ms,
        "output": invocation.output,
        "error": invocation.error,
        "created_at": _iso(invocation.created_at),
    }


def session_trace(*, session: DiagnosisSession) -> dict:
    self_evaluation = self_evaluation_of(session=session)
    trace = {
        "session": {
            "session_id": session.session_id,
            "query": session.query,
            "status": session.status,
            "output_type": session.output_type,
            "answer": session.answer,
            "engine": session.engine,
            "rounds": session.rounds,
            "feedback": session.feedback,
            "error": session.error,
            "created_at": _iso(session.created_at),
            "finished_at": _iso(session.finished_at),
        },
        "hasFeedback": session.feedback is not None,
        "hasVerifierEvaluation": bool(self_evaluation.get(VERIFIER_EVALUATION)),
        "hasAiOpsRuleEvaluation": bool(self_evaluation.get(AIOPS_RULE_EVALUATION)),
        "self_evaluation": self_evaluation,
        "steps": [_step(step) for step in session.steps.all()],
        "tool_invocations": [_invocation(invocation) for invocation in session.tool_invocations.all()],
    }
    # AIOps sessions only: the alerts and each alert's child session (or, for a child, its parent).
    aiops = aiops_summary(session=session)
    if aiops is not None:
        trace["aiops"] = aiops
    return trace


def session_trace_for_user(*, user, session_id: str) -> dict:
    """The trace of a session the user may see; `DiagnosisSession.DoesNotExist` otherwise."""
    return session_trace(session=session_get(user=user, session_id=session_id))
