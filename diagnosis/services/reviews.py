"""Recording a reviewer's judgement of a session: agree or disagree with the verifier, and why."""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from diagnosis.models import DiagnosisSession, SessionReview
from diagnosis.signals import session_reviewed

VERDICTS = ("PASS", "LOW_CONFID", "REJECT")


def review_record(
    *,
    session: DiagnosisSession,
    reviewer: AbstractBaseUser,
    opinion: str,
    expected_verdict: str = "",
    note: str = "",
) -> SessionReview:
    """Store the review and announce it (`session_reviewed`, in the same transaction): the feedback
    app closes the session's open user report, if any, since it has now been looked at.

    Agreeing means the verifier's verdict was right, so the expected verdict is that verdict.
    Disagreeing needs the verdict the reviewer expected instead, and it must differ.
    """
    if opinion not in SessionReview.Opinion.values:
        raise ValidationError({"opinion": _("Choose agree or disagree.")})
    if opinion == SessionReview.Opinion.AGREE:
        expected_verdict = session.verdict
    elif expected_verdict not in VERDICTS:
        raise ValidationError({"expected_verdict": _("Say which verdict you expected.")})
    elif expected_verdict == session.verdict:
        raise ValidationError(
            {"expected_verdict": _("A disagreement needs a verdict other than the verifier’s.")}
        )
    with transaction.atomic():
        review = SessionReview.objects.create(
            session=session,
            reviewer=reviewer,
            opinion=opinion,
            expected_verdict=expected_verdict,
            note=note.strip(),
        )
        session_reviewed.send(sender=SessionReview, session=session, review=review)
    return review
