"""The chat page's feedback bar (htmx, or a plain form post and a redirect)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from diagnosis.models import DiagnosisSession
from diagnosis.views import is_htmx
from feedback.services import feedback_record


@login_required
@require_POST
def feedback(request: HttpRequest, session_id: str) -> HttpResponse:
    value = request.POST.get("feedback", "")
    context = {"session_id": session_id, "feedback": value}
    try:
        result = feedback_record(session_id=session_id, feedback=value, user=request.user)
    except DiagnosisSession.DoesNotExist as error:
        raise Http404 from error
    except ValidationError as error:
        context.update(feedback=None, errors=error.messages)
        return render(request, "diagnosis/_feedback.html", context, status=400)
    if not is_htmx(request):
        messages.success(request, result.message)
        return redirect("chat-conversation", session_id=session_id)
    return render(request, "diagnosis/_feedback.html", context | {"message": result.message})
