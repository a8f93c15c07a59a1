"""The chat page from its records (`diagnosis.selectors.chat`): the open conversation's panel and the
example questions."""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnosis.models import DiagnosisSession
from diagnosis.presenters.aiops import aiops_report_view
from diagnosis.presenters.charts import TimelineView, timeline_view
from diagnosis.presenters.evidence import BindingView, SessionPanel, binding_view, session_panel
from diagnosis.presenters.examples import AskExamples, ask_examples
from diagnosis.selectors.aiops import AiOpsReport
from diagnosis.selectors.chat import ChatContents, Conversation


@dataclass
class ChatPanel(SessionPanel):
    """A session's panel; for an AIOps analysis also the sessions that diagnosed its alerts and the
    report's head; for one of those sessions the analysis it belongs to."""

    alert_sessions: list[DiagnosisSession] = field(default_factory=list)
    report: AiOpsReport | None = None
    parent_session_id: str | None = None
    # The range-query series the alerts' sessions cited and showed, drawn under the report.
    alert_charts: list[tuple[DiagnosisSession, BindingView]] = field(default_factory=list)
    # The timelines of the alerts' investigations, drawn under the report.
    alert_timelines: list[tuple[DiagnosisSession, TimelineView]] = field(default_factory=list)
    incident_timelines: list[tuple[str, TimelineView]] = field(default_factory=list)


@dataclass(frozen=True)
class ChatPage:
    conversations: list[DiagnosisSession]
    panel: ChatPanel | None
    examples: AskExamples


def chat_panel(*, conversation: Conversation) -> ChatPanel:
    return ChatPanel(
        **vars(session_panel(evidence=conversation)),
        alert_sessions=conversation.alert_sessions,
        report=None if conversation.report is None else aiops_report_view(conversation.report),
        parent_session_id=conversation.parent_session_id,
        alert_charts=[(child, binding_view(binding)) for child, binding in conversation.alert_series],
        alert_timelines=[
            (child, timeline_view(timeline)) for child, timeline in conversation.alert_timelines
        ],
        incident_timelines=[
            (caption, timeline_view(timeline)) for caption, timeline in conversation.incident_timelines
        ],
    )


def chat_page(*, contents: ChatContents) -> ChatPage:
    conversation = contents.conversation
    return ChatPage(
        conversations=contents.conversations,
        panel=None if conversation is None else chat_panel(conversation=conversation),
        examples=ask_examples(subjects=contents.ask_subjects),
    )
