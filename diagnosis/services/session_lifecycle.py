"""What every kind of session shares: being queued, claimed once, updated live, and failing cleanly."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from diagnosis import tracing
from diagnosis.models import DiagnosisSession
from diagnosis.services.session_liveness import SessionProgress, session_heartbeat, session_is_lost

logger = logging.getLogger(__name__)
Status = DiagnosisSession.Status
# What users see of any failure: stable, with the error id that finds the row (`error` holds the raw
# cause, for staff) and the log line with its traceback. Exception text can carry paths, hosts, SQL or
# a model server's reply: it is never shown to users.
FAILED_HEADINGS = {
    DiagnosisSession.Kind.CHAT: "诊断执行失败",
    DiagnosisSession.Kind.AIOPS: "告警分析执行失败",
    DiagnosisSession.Kind.TOOL: "工具调用执行失败",
    DiagnosisSession.Kind.VERIFY: "断言核对执行失败",
}
RETRY_ADVICE = "请稍后重试或联系管理员。"
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
    it FAILED with the reason for staff and a stable message with an error id for users (the traceback
    goes to the log under that id), also django-q's timeout and a stopping worker (SystemExit, KeyboardInterrupt: re-raised once recorded). A session already
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
            error_id = new_error_id()
            logger.warning(
                "session %s (error id %s): delivered again, its worker is gone: failed",
                session.session_id,
                error_id,
            )
            _session_fail(session, error=WORKER_LOST_ERROR, error_id=error_id)
        else:
            logger.warning("session %s is %s, not PENDING: not run", session.session_id, session.status)
        return session
    # Its span ends with the session's outcome as written (read off the refreshed row).
    with tracing.session_traced(session) as traced:
        try:
            with session_heartbeat(session_pk=session.pk, progress=progress):
                body(session)
        except BaseException as exc:
            traced.failed(exc)
            # An error with a `staff_detail` (the model endpoint's own text) has a message fit for users
            # and its own error id; any other exception's text is for staff only.
            staff_detail = getattr(exc, "staff_detail", None)
            error_id = getattr(exc, "error_id", None) or new_error_id() if staff_detail else new_error_id()
            logger.exception("session %s failed (error id %s)", session.session_id, error_id)
            error = f"{type(exc).__name__}: {exc}" + (f"\n{staff_detail}" if staff_detail else "")
            _session_fail(
                session, error=error, error_id=error_id, user_message=str(exc) if staff_detail else ""
            )
            if not isinstance(exc, Exception):
                raise
        session.refresh_from_db()
    return session


def new_error_id() -> str:
    """Eight hex digits: short enough to read out on the phone, unique enough among a team's failures."""
    return secrets.token_hex(4)


def session_failure_fields(*, kind: str, error: str, error_id: str, user_message: str = "") -> dict[str, str]:
    """The columns every failure writes: the raw `error` for staff, the stable answer for users (an
    error that says what users may read, such as a model endpoint's outage, says it with its own id)."""
    heading = FAILED_HEADINGS[kind]
    answer = (
        f"{heading}：{user_message}，{RETRY_ADVICE}"
        if user_message
        else f"{heading}（错误编号 {error_id}），{RETRY_ADVICE}"
    )
    return {"error": error, "error_id": error_id, "answer": answer}


def _session_fail(session: DiagnosisSession, *, error: str, error_id: str, user_message: str = "") -> None:
    """End it FAILED if it is still RUNNING: one the reaper ended meanwhile keeps its first cause."""
    now = timezone.now()
    DiagnosisSession.objects.filter(pk=session.pk, status=Status.RUNNING).update(
        status=Status.FAILED,
        **session_failure_fields(
            kind=session.kind, error=error, error_id=error_id, user_message=user_message
        ),
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
