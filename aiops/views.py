"""The chat page's "AI Ops" button: analyse every firing alert, then show the report as a conversation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from aiops.services import aiops_start
from diagnosis.services.sessions import SessionRateLimited


@login_required
@require_POST
def ai_ops(request: HttpRequest) -> HttpResponse:
    try:
        session = aiops_start(owner=request.user)
    except SessionRateLimited as error:
        messages.error(request, error.message)
        return redirect("chat")
    return redirect("chat-conversation", session_id=session.session_id)
