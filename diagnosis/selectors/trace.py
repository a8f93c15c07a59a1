"""Everything recorded about one session, for the API and `diagnose --json`.

`diagnosis.serializers.TraceSerializer` turns it into the trace JSON and documents that shape in
the OpenAPI schema: one shape, not two. Two queries whatever the session's size: its steps and its
invocations (none if prefetched).
"""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.aiops import aiops_summary
from diagnosis.selectors.self_evaluation import AIOPS_RULE_EVALUATION, VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.selectors.sessions import session_get, user_may_view_all_sessions


@dataclass(frozen=True)
class SessionTrace:
    session: DiagnosisSession
    # The container with legacy root-level data moved into its slots.
    self_evaluation: dict
    # AIOps sessions only: the alerts and each alert's child session (or, for a child, its parent).
    aiops: dict | None
    # The session's `error` as this reader may see it: the raw cause for staff, the stable message
    # with its error id for everybody else.
    error: str

    @property
    def has_feedback(self) -> bool:
        return self.session.feedback is not None

    @property
    def has_verifier_evaluation(self) -> bool:
        return bool(self.self_evaluation.get(VERIFIER_EVALUATION))

    @property
    def has_aiops_rule_evaluation(self) -> bool:
        return bool(self.self_evaluation.get(AIOPS_RULE_EVALUATION))


def session_trace(*, session: DiagnosisSession, error_detail: bool = True) -> SessionTrace:
    """`error_detail=False` puts the users' stable failure message (the answer, which names the error
    id) in place of the raw cause; a failure recorded without an id has only our own reason text."""
    return SessionTrace(
        session=session,
        self_evaluation=self_evaluation_of(session=session),
        aiops=aiops_summary(session=session),
        error=session.error if error_detail or not session.error_id else session.answer,
    )


def session_trace_for_user(*, user, session_id: str) -> SessionTrace:
    """The trace of a session the user may see, the raw error only for those who may read every
    session (reviewers); `DiagnosisSession.DoesNotExist` otherwise."""
    return session_trace(
        session=session_get(user=user, session_id=session_id),
        error_detail=user_may_view_all_sessions(user=user),
    )
