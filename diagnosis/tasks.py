"""django-q2 task entry points: thin wrappers the cluster imports by dotted path."""

import logging

from django.conf import settings
from django.db import OperationalError

from diagnosis.services.claims_verification import claims_verification_run
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue, rule_evaluation_run
from diagnosis.services.session_runner import session_run
from diagnosis.services.sessions_maintenance import stale_sessions_fail as stale_sessions_fail_service

logger = logging.getLogger(__name__)
# A rule evaluation that meets a busy or unreachable database is queued again, not lost.
RULE_EVALUATION_ATTEMPTS = 5


def session_run_task(session_pk: int) -> None:
    session_run(session_pk=session_pk)


def claims_verification_task(session_pk: int) -> None:
    claims_verification_run(session_pk=session_pk)


def rule_evaluation_task(session_pk: int, attempt: int = 1) -> dict | None:
    try:
        return rule_evaluation_run(session_pk=session_pk)
    except OperationalError:
        if attempt >= RULE_EVALUATION_ATTEMPTS:
            raise
        logger.warning(
            "rule evaluation of session %s: database error, queued again", session_pk, exc_info=True
        )
        rule_evaluation_enqueue(session_pk=session_pk, attempt=attempt + 1)
        return None


def stale_sessions_fail() -> int:
    return stale_sessions_fail_service(older_than_seconds=settings.DIAGNOSIS["STALE_AFTER_SECONDS"])
