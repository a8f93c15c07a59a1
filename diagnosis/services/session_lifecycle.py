"""What every kind of session shares: being queued, claimed once, updated live, and failing cleanly."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from diagnosis.models import DiagnosisSession

logger = logging.getLogger(__name__)
Status = DiagnosisSession.Status
FAILED_ANSWERS = {
    DiagnosisSession.Kind.CHAT: "诊断执行失败：{error}。请稍后重试或联系值班人员。",
    DiagnosisSession.Kind.AIOPS: "告警分析执行失败：{error}。请稍后重试或联系值班人员。",
}


def session_enqueue(*, session: DiagnosisSession, task: str) -> None:
    """Queue `task(session_pk)` on django-q2 once the creating transaction has committed."""

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task(task, session.pk, task_name=f"{session.kind}-session-{session.pk}")

    transaction.on_commit(enqueue)


def session_execute(
    *, session_pk: int, body: Callable[[DiagnosisSession], None], first_stage: str = ""
) -> DiagnosisSession:
    """Claim a PENDING session atomically and run `body` on it; any exception ends it FAILED with the
    reason (the traceback goes to the log, not to users). A session already claimed by another worker,
    or failed by the stale-session reaper, is left alone."""
    now = timezone.now()
    claimed = DiagnosisSession.objects.filter(pk=session_pk, status=Status.PENDING).update(
        status=Status.RUNNING, started_at=now, current_stage=first_stage, updated_at=now
    )
    session = DiagnosisSession.objects.get(pk=session_pk)
    if not claimed:
        logger.warning("session %s is %s, not PENDING: not run", session.session_id, session.status)
        return session
    try:
        body(session)
    except Exception as exc:
        logger.exception("session %s failed", session.session_id)
        error = f"{type(exc).__name__}: {exc}"
        session_update(
            session,
            status=Status.FAILED,
            error=error,
            answer=FAILED_ANSWERS[session.kind].format(error=error),
            output_type="",
            current_stage="failed",
            finished_at=timezone.now(),
        )
    session.refresh_from_db()
    return session


def session_update(session: DiagnosisSession, **fields: Any) -> None:
    """Write these fields now (one UPDATE, no transaction kept open) and mirror them on the object."""
    for name, value in fields.items():
        setattr(session, name, value)
    DiagnosisSession.objects.filter(pk=session.pk).update(**fields, updated_at=timezone.now())
