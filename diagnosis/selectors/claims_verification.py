"""Reading a `verify` session: its check as the pipeline wrote it, and who may read it."""

from __future__ import annotations

from pydantic import ValidationError

from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.claims_check import ClaimsCheck
from diagnosis.selectors.self_evaluation import CLAIMS_VERIFICATION, self_evaluation_of
from diagnosis.selectors.sessions import session_visible_queryset


def claims_check_of(*, session: DiagnosisSession) -> ClaimsCheck | None:
    """The session's stored check; None before it ended, for a failed one, or when unreadable."""
    raw = self_evaluation_of(session=session).get(CLAIMS_VERIFICATION)
    if not raw:
        return None
    try:
        return ClaimsCheck.model_validate(raw)
    except ValidationError:
        return None


def claims_verification_get(*, user, session_id: str) -> DiagnosisSession:
    """A `verify` session the user may see (as any session: their own, reviewers every one);
    `DiagnosisSession.DoesNotExist` otherwise."""
    return session_visible_queryset(user=user).get(session_id=session_id, kind=DiagnosisSession.Kind.VERIFY)


def invocation_locations(*, session: DiagnosisSession) -> dict[int, tuple[str, str]]:
    """Each of the session's invocations by id: the source its output came from and the source's location."""
    return {
        pk: (source, location)
        for pk, source, location in session.tool_invocations.values_list("pk", "source", "source_location")
    }
