"""What a reviewer sees on a session's admin page, beyond its own columns."""

from __future__ import annotations

from dataclasses import dataclass

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession, SessionReview
from diagnosis.selectors.evidence import CheckedRound, session_rounds, session_slots


@dataclass(frozen=True)
class SessionAudit:
    rounds: list[CheckedRound]
    rule_evaluation: dict
    aiops_rule_evaluation: dict
    reviews: list[SessionReview]
    case: CaseLibrary | None


def session_audit(*, session: DiagnosisSession) -> SessionAudit:
    slots = session_slots(session=session)
    return SessionAudit(
        rounds=session_rounds(session=session),
        rule_evaluation=slots["rule_evaluation"],
        aiops_rule_evaluation=slots["aiops_rule_evaluation"],
        reviews=list(session.reviews.select_related("reviewer")),
        case=CaseLibrary.objects.filter(diagnosis_id=session.session_id).first(),
    )
