"""Recording a user's feedback on a diagnosis (seed 004 §7): useful → case, not_useful → bad case.

Feedback is the user's opinion of the answer; it never touches the execution `status`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.sessions import session_visible_queryset
from diagnosis.services.cases import case_create_from_session, session_may_become_case
from feedback.models import BadCase

FINISHED_STATUSES = (DiagnosisSession.Status.COMPLETED, DiagnosisSession.Status.FAILED)


@dataclass(frozen=True)
class FeedbackResult:
    success: bool
    message: str
    case_id: uuid.UUID | None


def feedback_record(*, session_id: str, feedback: str, user: AbstractBaseUser) -> FeedbackResult:
    """Store the feedback on a finished (completed or failed) session the user may see.

    `useful` on a completed session also saves it as a case; a failed one has no findings to keep,
    so its feedback is recorded without a case.
    Raises `DiagnosisSession.DoesNotExist` for an unknown (or someone else's) session and
    `ValidationError` for any other value than useful / not_useful or a session still running.
    """
    if feedback not in DiagnosisSession.Feedback.values:
        raise ValidationError({"feedback": _("Feedback must be “useful” or “not_useful”.")})
    with transaction.atomic():
        # The row lock makes two clicks on the same session take turns.
        session = session_visible_queryset(user=user).select_for_update().get(session_id=session_id)
        if session.status not in FINISHED_STATUSES:
            raise ValidationError(
                {"sessionId": _("The diagnosis is still running; give feedback when it ends.")}
            )
        # update() rather than save(): a background writer may be merging self_evaluation right now.
        DiagnosisSession.objects.filter(pk=session.pk).update(feedback=feedback, updated_at=timezone.now())
        session.feedback = feedback
        if feedback == DiagnosisSession.Feedback.USEFUL:
            if not session_may_become_case(session=session):
                return FeedbackResult(
                    success=True,
                    message=_("Feedback recorded; a failed diagnosis is not saved as a case."),
                    case_id=None,
                )
            case, _created = case_create_from_session(session=session)
            return FeedbackResult(
                success=True, message=_("Feedback recorded; saved as a case."), case_id=case.case_id
            )
        BadCase.objects.update_or_create(session=session, defaults={"reported_by": user, "resolved": False})
        return FeedbackResult(
            success=True, message=_("Feedback recorded; the diagnosis is queued for review."), case_id=None
        )


def bad_case_resolve_on_review(*, session: DiagnosisSession, **_signal) -> None:
    """A review closes the session's open user report: it has now been looked at."""
    BadCase.objects.filter(session=session, resolved=False).update(resolved=True)
