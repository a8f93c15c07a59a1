"""Recording a user's feedback on a diagnosis: useful → case, not_useful → bad case.

Feedback is the owner's opinion of the answer they got; it never touches the execution `status`.
Only the owner gives it: someone else's session, reviewers' included, is not found (reviewers
record reviews in the admin instead). A case from "useful" is a candidate until a reviewer approves
it; a later "not_useful" withdraws what the earlier "useful" put forward (`case_withdraw_on_not_useful`).
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
from diagnosis.selectors.sessions import session_owned_queryset
from diagnosis.services.cases import (
    case_create_from_session,
    case_withdraw_on_not_useful,
    session_may_become_case,
)
from feedback.models import BadCase

FINISHED_STATUSES = (DiagnosisSession.Status.COMPLETED, DiagnosisSession.Status.FAILED)


@dataclass(frozen=True)
class FeedbackResult:
    success: bool
    message: str
    case_id: uuid.UUID | None


def feedback_record(*, session_id: str, feedback: str, user: AbstractBaseUser) -> FeedbackResult:
    """Store the owner's feedback on their finished (completed or failed) session.

    `useful` on a completed session with verified findings also puts it forward as a candidate case;
    a failed one, or one without findings, has nothing to keep, so its feedback is recorded without a case.
    Raises `DiagnosisSession.DoesNotExist` for an unknown (or someone else's) session and
    `ValidationError` for any other value than useful / not_useful or a session still running.
    """
    if feedback not in DiagnosisSession.Feedback.values:
        raise ValidationError({"feedback": _("Feedback must be “useful” or “not_useful”.")})
    with transaction.atomic():
        # The row lock makes two clicks on the same session take turns.
        session = session_owned_queryset(user=user).select_for_update().get(session_id=session_id)
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
            try:
                case, _created = case_create_from_session(session=session)
            except ValidationError as error:
                return FeedbackResult(
                    success=True, message=f"反馈已记录；{' '.join(error.messages)}", case_id=None
                )
            return FeedbackResult(
                success=True, message="反馈已记录，已作为候选案例提交审核。", case_id=case.case_id
            )
        case_withdraw_on_not_useful(session=session)
        BadCase.objects.update_or_create(session=session, defaults={"reported_by": user, "resolved": False})
        return FeedbackResult(
            success=True, message=_("Feedback recorded; the diagnosis is queued for review."), case_id=None
        )


def bad_case_resolve_on_review(*, session: DiagnosisSession, **_signal) -> None:
    """A review closes the session's open user report: it has now been looked at."""
    BadCase.objects.filter(session=session, resolved=False).update(resolved=True)
