"""Everything recorded about one session, for the API, MCP `session_trace` and `diagnose --json`.

`diagnosis.serializers.TraceSerializer` turns it into the trace JSON and documents that shape in
the OpenAPI schema: one shape, not two. Its tool invocations come a page at a time (`TRACE_PAGE_SIZE`,
`diagnose --json` all of them), each output within the output bounds (`tools.bounds`) even when it was
stored before they held: a page's size is bounded whatever the session holds. Three queries whatever
the session's size: its steps, the count of its invocations and the page of them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from django.conf import settings

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.selectors.aiops import aiops_summary
from diagnosis.selectors.self_evaluation import AIOPS_RULE_EVALUATION, VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.selectors.sessions import session_get, user_may_view_all_sessions
from tools.bounds import OutputBounds, output_bounded
from tools.evidence.registry import kind_named
from tools.evidence.result import refs_read


@dataclass(frozen=True)
class InvocationsPage:
    """Which invocations a trace holds: page `number` of `size` each, of `total`."""

    number: int
    size: int
    total: int

    @property
    def next_page(self) -> int | None:
        return self.number + 1 if self.number * self.size < self.total else None


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
    # This page's invocations, each output within the bounds.
    invocations: list[ToolInvocation]
    invocations_page: InvocationsPage

    @property
    def has_feedback(self) -> bool:
        return self.session.feedback is not None

    @property
    def has_verifier_evaluation(self) -> bool:
        return bool(self.self_evaluation.get(VERIFIER_EVALUATION))

    @property
    def has_aiops_rule_evaluation(self) -> bool:
        return bool(self.self_evaluation.get(AIOPS_RULE_EVALUATION))


def session_trace(
    *, session: DiagnosisSession, error_detail: bool = True, page: int | None = None
) -> SessionTrace:
    """`error_detail=False` puts the users' stable failure message (the answer, which names the error
    id) in place of the raw cause; a failure recorded without an id has only our own reason text.
    `page` (from 1) holds `TRACE_PAGE_SIZE` invocations; None, every invocation (one page)."""
    if page is None:
        invocations = list(session.tool_invocations.all())
        invocations_page = InvocationsPage(number=1, size=len(invocations), total=len(invocations))
    else:
        size = settings.DIAGNOSIS["TRACE_PAGE_SIZE"]
        invocations_page = InvocationsPage(number=page, size=size, total=session.tool_invocations.count())
        invocations = list(session.tool_invocations.all()[(page - 1) * size : page * size])
    bounds = OutputBounds.configured()
    return SessionTrace(
        session=session,
        self_evaluation=self_evaluation_of(session=session),
        aiops=aiops_summary(session=session),
        error=session.error if error_detail or not session.error_id else session.answer,
        invocations=[invocation_bounded(invocation=invocation, bounds=bounds) for invocation in invocations],
        invocations_page=invocations_page,
    )


def session_trace_for_user(*, user, session_id: str, page: int = 1) -> SessionTrace:
    """A page of the trace of a session the user may see, the raw error only for those who may read
    every session (reviewers); `DiagnosisSession.DoesNotExist` otherwise."""
    return session_trace(
        session=session_get(user=user, session_id=session_id),
        error_detail=user_may_view_all_sessions(user=user),
        page=page,
    )


def invocation_bounded(*, invocation: ToolInvocation, bounds: OutputBounds) -> ToolInvocation:
    """The invocation as a trace shows it: its output within `bounds` and only the evidence refs of
    the records kept; the stored row itself (never saved back) when it is within them already."""
    kind = kind_named(invocation.tool_name)
    # An unknown tool's output is the failure's, bounded when recorded; a helper's holds no records.
    if kind is None or kind.collection_key is None:
        return invocation
    key = kind.collection_key
    output = output_bounded(invocation.output, key=key, noun=kind.counted_as, bounds=bounds)
    if output is invocation.output:
        return invocation
    kept = len(output[key])
    # The stored refs and the typed ones stand in one order: a ref to no record (`$.no_evidence`) stays.
    refs = refs_read(invocation.retrieval_details, key=key)
    shown = copy.copy(invocation)
    shown.output = output
    shown.retrieval_details = {
        **invocation.retrieval_details,
        "evidence_refs": [
            stored
            for stored, ref in zip(invocation.evidence_refs, refs, strict=True)
            if ref.index is None or ref.index < kept
        ],
    }
    return shown
