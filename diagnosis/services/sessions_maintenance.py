"""Housekeeping for sessions a dead worker left behind (issue 4 item 2, issue 14).

A worker that dies mid-session cannot mark it FAILED itself, so a reaper ends sessions that have been
PENDING or RUNNING for too long, or RUNNING without a heartbeat, saying why in `error`, with an error id
and the stable message users see (`session_failure_fields`). It runs every
minute on the cluster; `migrate` and every worker start make sure it is scheduled.
"""

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule

from diagnosis.models import DiagnosisSession
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue
from diagnosis.services.session_lifecycle import new_error_id, session_failure_fields
from diagnosis.services.session_liveness import lost_before
from diagnosis.signals import sessions_reaped

logger = logging.getLogger(__name__)
STALE_SESSIONS_SCHEDULE_NAME = "stale_sessions_fail"
STALE_SESSIONS_EVERY_MINUTES = 1
LOST = "lost"


def _stale_reason(*, status: str, older_than_seconds: int) -> str:
    if status == DiagnosisSession.Status.PENDING:
        return f"会话排队超过 {older_than_seconds} 秒仍未开始执行（后台工作进程可能未运行），已标记为失败。"
    if status == LOST:
        return "执行该会话的后台工作进程已停止（会话已没有心跳），已标记为失败。"
    return f"会话执行超过 {older_than_seconds} 秒仍未结束（后台工作进程可能已退出），已标记为失败。"


def stale_sessions_fail(*, older_than_seconds: int) -> int:
    """End sessions stuck PENDING or RUNNING longer than the limit, or RUNNING without a heartbeat, as
    FAILED; return how many."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    stuck_pending = Q(status=DiagnosisSession.Status.PENDING, created_at__lt=cutoff)
    # A RUNNING session without started_at has only its creation time to go by.
    stuck_running = Q(status=DiagnosisSession.Status.RUNNING) & (
        Q(started_at__lt=cutoff) | Q(started_at__isnull=True, created_at__lt=cutoff)
    )
    lost_cutoff = lost_before(now=now)
    lost = Q(status=DiagnosisSession.Status.RUNNING, updated_at__lt=lost_cutoff)
    failed = 0
    with transaction.atomic():
        # Locked rows belong to a worker writing right now: alive, so not stale.
        stale = list(
            DiagnosisSession.objects.select_for_update(skip_locked=True)
            .filter(stuck_pending | stuck_running | lost)
            .values_list("pk", "session_id", "kind", "status", "updated_at")
        )
        for pk, session_id, kind, status, updated_at in stale:
            reason = (
                LOST if status == DiagnosisSession.Status.RUNNING and updated_at < lost_cutoff else status
            )
            error = _stale_reason(status=reason, older_than_seconds=older_than_seconds)
            error_id = new_error_id()
            # The status condition again: a session that ended meanwhile keeps its outcome.
            ended = DiagnosisSession.objects.filter(pk=pk, status=status).update(
                status=DiagnosisSession.Status.FAILED,
                **session_failure_fields(kind=kind, error=error, error_id=error_id),
                finished_at=now,
                updated_at=now,
            )
            if ended:
                logger.warning("session %s (error id %s) reaped: %s", session_id, error_id, error)
            failed += ended
        for pk, *_ in stale:
            rule_evaluation_enqueue(session_pk=pk)
        if stale:
            reaped = [pk for pk, *_ in stale]
            # After the commit: receivers (AIOps reports) read the failure and write their own records.
            transaction.on_commit(lambda: sessions_reaped.send(sender=DiagnosisSession, session_pks=reaped))
    return failed


def stale_sessions_schedule_ensure() -> Schedule:
    """Run the reaper every minute on the django-q2 cluster (idempotent; worker processes starting
    together may race to create it, the duplicates go)."""
    schedule, _ = Schedule.objects.update_or_create(
        name=STALE_SESSIONS_SCHEDULE_NAME,
        defaults={
            "func": "diagnosis.tasks.stale_sessions_fail",
            "schedule_type": Schedule.MINUTES,
            "minutes": STALE_SESSIONS_EVERY_MINUTES,
            "repeats": -1,
        },
    )
    Schedule.objects.filter(name=STALE_SESSIONS_SCHEDULE_NAME).exclude(pk=schedule.pk).delete()
    return schedule
