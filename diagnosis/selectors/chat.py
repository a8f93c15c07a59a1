"""What the chat page shows: the user's conversations and, when one is open, its live panel."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.aiops import AiOpsReport, aiops_report
from diagnosis.selectors.evidence import BindingView, SessionPanel, invocation_sources, session_panel
from diagnosis.selectors.examples import AskExamples, ask_examples
from diagnosis.selectors.sessions import session_sidebar, session_visible_queryset


@dataclass
class ChatPanel(SessionPanel):
    """A session's panel; for an AIOps analysis also the sessions that diagnosed its alerts and the
    report's head; for one of those sessions the analysis it belongs to."""

    alert_sessions: list[DiagnosisSession] = field(default_factory=list)
    report: AiOpsReport | None = None
    parent_session_id: str | None = None
    # The range-query series the alerts' sessions cited and showed, drawn under the report.
    alert_charts: list[tuple[DiagnosisSession, BindingView]] = field(default_factory=list)


@dataclass(frozen=True)
class ChatPage:
    conversations: list[DiagnosisSession]
    panel: ChatPanel | None
    examples: AskExamples


def chat_panel(*, user, session_id: str) -> ChatPanel:
    """The panel of a session the user may see; `DiagnosisSession.DoesNotExist` otherwise."""
    session = (
        session_visible_queryset(user=user)
        .prefetch_related("steps", "tool_invocations")
        .get(session_id=session_id)
    )
    is_analysis = session.kind == DiagnosisSession.Kind.AIOPS and session.parent_id is None
    children = (
        list(session.children.order_by("id").prefetch_related("steps", "tool_invocations"))
        if is_analysis
        else []
    )
    parent = session.parent if session.parent_id else None
    panel = session_panel(session=session)
    if children:
        # The report quotes its alerts' sessions' evidence: their invocations name its references.
        panel.references = replace(
            panel.references, sources=invocation_sources(sessions=[session, *children])
        )
    return ChatPanel(
        **vars(panel),
        alert_sessions=children,
        report=aiops_report(session=session, children=children) if is_analysis else None,
        parent_session_id=parent.session_id if parent else None,
        alert_charts=[(child, binding) for child in children for binding in _charted_bindings(child)],
    )


def _charted_bindings(session: DiagnosisSession) -> list[BindingView]:
    """The bindings with a chart among what the session's panel shows (never a hidden claim's)."""
    panel = session_panel(session=session)
    shown = [binding for claim in panel.claims for binding in claim.bindings] + panel.verified_bindings
    return [binding for binding in shown if binding.chart is not None]


def chat_page(*, user, session_id: str | None = None) -> ChatPage:
    panel = chat_panel(user=user, session_id=session_id) if session_id else None
    return ChatPage(conversations=session_sidebar(user=user), panel=panel, examples=ask_examples())
