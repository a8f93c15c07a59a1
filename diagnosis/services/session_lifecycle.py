"""What every kind of session shares: being queued, claimed once, updated live, and failing cleanly."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from diagnosis.models import DiagnosisSession
from diagnosis.services.session_liveness import SessionProgress, session_heartbeat, session_is_lost

logger = logging.getLogger(__name__)
Status = DiagnosisSession.Status
FAILED_ANSWERS = {
    DiagnosisSession.Kind.CHAT: "诊断执行失败：{error}。请稍后重试或联系值班人员。",
    DiagnosisSession.Kind.AIOPS: "告警分析执行失败：{error}。请稍后重试或联系值班人员。",
}
WORKER_LOST_ERROR = "执行该会话的后台工作进程在会话结束前停止（任务被重新投递时会话已没有心跳）"


def session_enqueue(*, session: DiagnosisSession, task: str) -> None:
    """Queue `task(session_pk)` on django-q2 once the creating transaction has committed."""

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task(task, session.pk, task_name=f"{session.kind}-session-{session.pk}")

    transaction.on_commit(enqueue)


def session_execute(
    *,
    session_pk: int,
    body: Callable[[DiagnosisSession], None],
    first_stage: str = "",
    progress: SessionProgress | None = None,
) -> DiagnosisSession:
    """Claim a PENDING session atomically and run `body` on it, its heartbeat beating; any exception ends
    it FAILED with the reason (the traceback goes to the log, not to users), also django-q's timeout and
    a stopping worker (SystemExit, KeyboardInterrupt: re-raised once recorded). A session already
    claimed by a live worker, or ended, is left alone; a RUNNING one whose worker is gone (a task
    delivered again after its worker died) ends FAILED now instead of waiting for the reaper. The
    heartbeat writes `progress` (which `body` updates) for the live view."""
    now = timezone.now()
    claimed = DiagnosisSession.objects.filter(pk=session_pk, status=Status.PENDING).update(
        status=Status.RUNNING, started_at=now, current_stage=first_stage, updated_at=now
    )
    session = DiagnosisSession.objects.get(pk=session_pk)
    if not claimed:
        if session_is_lost(session):
            logger.warning("session %s: delivered again, its worker is gone: failed", session.session_id)
            _session_fail(session, error=WORKER_LOST_ERROR)
        else:
            logger.warning("session %s is %s, not PENDING: not run", session.session_id, session.status)
        return session
    try:
        with session_heartbeat(session_pk=session.pk, progress=progress):
            body(session)
    except BaseException as exc:
        logger.exception("session %s failed", session.session_id)
        _session_fail(session, error=f"{type(exc).__name__}: {exc}")
        if not isinstance(exc, Exception):
            raise
    session.refresh_from_db()
    return session


def _session_fail(session: DiagnosisSession, *, error: str) -> None:
    """End it FAILED if it is still RUNNING: one the reaper ended meanwhile keeps its first cause."""
    now = timezone.now()
    DiagnosisSession.objects.filter(pk=session.pk, status=Status.RUNNING).update(
        status=Status.FAILED,
        error=error,
        answer=FAILED_ANSWERS[session.kind].format(error=error),
        output_type="",
        current_stage="failed",
        finished_at=now,
        updated_at=now,
    )
    session.refresh_from_db()


def session_update(session: DiagnosisSession, **fields: Any) -> None:
    """Write these fields now (one UPDATE, no transaction kept open) and mirror them on the object."""
    for name, value in fields.items():
        setattr(session, name, value)
    DiagnosisSession.objects.filter(pk=session.pk).update(**fields, updated_at=timezone.now())
