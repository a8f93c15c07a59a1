"""What the chat page shows: the user's conversations and, when one is open, its evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.investigation.incidents import IncidentFinding
from diagnosis.pipeline.investigation.timeline import Timeline, timeline_of
from diagnosis.selectors.aiops import AiOpsReport, aiops_report
from diagnosis.selectors.evidence import CitedEvidence, SessionEvidence, invocation_sources, session_evidence
from diagnosis.selectors.examples import AskSubjects, ask_subjects
from diagnosis.selectors.sessions import session_sidebar, session_visible_queryset


@dataclass
class Conversation(SessionEvidence):
    """A session's evidence; for an AIOps analysis also the sessions that diagnosed its alerts and the
    report's head; for one of those sessions the analysis it belongs to."""

    alert_sessions: list[DiagnosisSession] = field(default_factory=list)
    report: AiOpsReport | None = None
    parent_session_id: str | None = None
    # The range-query series the alerts' sessions cited and showed, drawn under the report.
    alert_series: list[tuple[DiagnosisSession, CitedEvidence]] = field(default_factory=list)
    # The timelines of the alerts' sessions' investigations, and of the report's incidents.
    alert_timelines: list[tuple[DiagnosisSession, Timeline]] = field(default_factory=list)
    incident_timelines: list[tuple[str, Timeline]] = field(default_factory=list)


@dataclass(frozen=True)
class ChatContents:
    conversations: list[DiagnosisSession]
    conversation: Conversation | None
    ask_subjects: AskSubjects


def chat_conversation(*, user, session_id: str) -> Conversation:
    """The evidence of a session the user may see; `DiagnosisSession.DoesNotExist` otherwise."""
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
    evidence = session_evidence(session=session)
    shown = {child.pk: session_evidence(session=child) for child in children}
    if children:
        # The report quotes its alerts' sessions' evidence: their invocations name its references.
        evidence.sources = invocation_sources(sessions=[session, *children])
    return Conversation(
        **vars(evidence),
        alert_sessions=children,
        report=aiops_report(session=session, children=children) if is_analysis else None,
        parent_session_id=parent.session_id if parent else None,
        alert_series=[
            (child, binding)
            for child in children
            for binding in shown[child.pk].shown_bindings
            # The bindings with a series among what the session's panel shows (never a hidden claim's).
            if binding.series is not None
        ],
        alert_timelines=[
            (child, timeline) for child in children if (timeline := shown[child.pk].timeline) is not None
        ],
        incident_timelines=incident_timelines(session=session) if is_analysis else [],
    )


def incident_timelines(*, session: DiagnosisSession) -> list[tuple[str, Timeline]]:
    """Each incident of an analysis (`事件 1 · 14:35 起`) with the timeline of its candidates, drawn from
    the analysis' own recorded calls and its alerts' sessions'."""
    incidents = [
        IncidentFinding.model_validate(found) for found in (session.alert_scope or {}).get("incidents") or []
    ]
    if not any(incident.timeline for incident in incidents):
        return []
    results = {
        invocation.pk: invocation.tool_result()
        for invocation in ToolInvocation.objects.filter(Q(session=session) | Q(session__parent=session))
    }
    return [
        (f"事件 {number} · {incident.onset} 起", timeline)
        for number, incident in enumerate(incidents, start=1)
        if (timeline := timeline_of(incident.timeline, results)) is not None
    ]


def chat_contents(*, user, session_id: str | None = None) -> ChatContents:
    conversation = chat_conversation(user=user, session_id=session_id) if session_id else None
    return ChatContents(
        conversations=session_sidebar(user=user), conversation=conversation, ask_subjects=ask_subjects()
    )
