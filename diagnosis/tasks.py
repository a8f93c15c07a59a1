"""django-q2 task entry points: thin wrappers the cluster imports by dotted path."""

from django.conf import settings

from diagnosis.services.rule_evaluation import rule_evaluation_run
from diagnosis.services.session_runner import session_run
from diagnosis.services.sessions_maintenance import stale_sessions_fail as stale_sessions_fail_service


def session_run_task(session_pk: int) -> None:
    session_run(session_pk=session_pk)


def rule_evaluation_task(session_pk: int) -> dict:
    return rule_evaluation_run(session_pk=session_pk)


def stale_sessions_fail() -> int:
    return stale_sessions_fail_service(older_than_seconds=settings.DIAGNOSIS["STALE_AFTER_SECONDS"])
