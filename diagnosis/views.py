"""The engineers' chat pages: server-rendered, with htmx for the live panel and the feedback bar.

Every page also works without JavaScript (plain form posts and redirects, a refresh while live).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from diagnosis.models import DiagnosisSession
from diagnosis.presenters.chat import ChatPage, chat_page, chat_panel
from diagnosis.selectors.chat import chat_contents, chat_conversation
from diagnosis.services.sessions import SessionRateLimited, session_start


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _chat_page(request: HttpRequest, *, session_id: str | None = None) -> ChatPage:
    return chat_page(contents=chat_contents(user=request.user, session_id=session_id))


@login_required
@require_GET
def chat(request: HttpRequest) -> HttpResponse:
    return render(request, "diagnosis/chat.html", {"page": _chat_page(request)})


@login_required
@require_GET
def conversation(request: HttpRequest, session_id: str) -> HttpResponse:
    try:
        page = _chat_page(request, session_id=session_id)
    except DiagnosisSession.DoesNotExist as error:
        raise Http404 from error
    return render(request, "diagnosis/chat.html", {"page": page})


@login_required
@require_GET
def conversation_panel(request: HttpRequest, session_id: str) -> HttpResponse:
    """The live part of a conversation, polled by htmx until the session ends."""
    try:
        panel = chat_panel(conversation=chat_conversation(user=request.user, session_id=session_id))
    except DiagnosisSession.DoesNotExist as error:
        raise Http404 from error
    # The sidebar entry of this conversation is refreshed out of band as its status changes.
    return render(request, "diagnosis/_panel.html", {"panel": panel, "sidebar_update": True})


@login_required
@require_POST
def ask(request: HttpRequest) -> HttpResponse:
    question = request.POST.get("message", "")
    try:
        session = session_start(query=question, owner=request.user)
    except ValidationError as error:
        return _ask_again(request, question=question, errors=error.messages, status=400)
    except SessionRateLimited as error:
        return _ask_again(request, question=question, errors=[error.message], status=429)
    return redirect("chat-conversation", session_id=session.session_id)


def _ask_again(request: HttpRequest, *, question: str, errors: list[str], status: int) -> HttpResponse:
    """The chat page again, the question kept in the form and the reason it was not started below it."""
    context = {"page": _chat_page(request), "errors": errors, "question": question}
    return render(request, "diagnosis/chat.html", context, status=status)
