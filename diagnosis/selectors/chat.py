"""What the chat page shows: the user's conversations and, when one is open, its live panel."""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.evidence import SessionPanel, session_panel
from diagnosis.selectors.sessions import session_sidebar, session_visible_queryset


@dataclass(frozen=True)
class ChatPage:
    conversations: list[DiagnosisSession]
    panel: SessionPanel | None


def chat_panel(*, user, session_id: str) -> SessionPanel:
    """The panel of a session the user may see; `DiagnosisSession.DoesNotExist` otherwise."""
    session = (
        session_visible_queryset(user=user)
        .prefetch_related("steps", "tool_invocations")
        .get(session_id=session_id)
    )
    return session_panel(session=session)


def chat_page(*, user, session_id: str | None = None) -> ChatPage:
    panel = chat_panel(user=user, session_id=session_id) if session_id else None
    return ChatPage(conversations=session_sidebar(user=user), panel=panel)
