"""Housekeeping for sessions a dead worker left behind (issue 4 item 2).

A worker that dies mid-session cannot mark it FAILED itself, so a periodic reaper ends sessions
that have been PENDING or RUNNING for too long, saying why in `error`.
"""

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_q.models import Schedule

from diagnosis.models import DiagnosisSession
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue

STALE_SESSIONS_SCHEDULE_NAME = "stale_sessions_fail"
STALE_SESSIONS_EVERY_MINUTES = 5


def _stale_reason(*, status: str, older_than_seconds: int) -> str:
    if status == DiagnosisSession.Status.PENDING:
        return f"会话排队超过 {older_than_seconds} 秒仍未开始执行（后台工作进程可能未运行），已标记为失败。"
    return f"会话执行超过 {older_than_seconds} 秒仍未结束（后台工作进程可能已退出），已标记为失败。"


def stale_sessions_fail(*, older_than_seconds: int) -> int:
    """End sessions stuck PENDING or RUNNING longer than the limit as FAILED; return how many."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    stuck_pending = Q(status=DiagnosisSession.Status.PENDING, created_at__lt=cutoff)
    # A RUNNING session without started_at has only its creation time to go by.
    stuck_running = Q(status=DiagnosisSession.Status.RUNNING) & (
        Q(started_at__lt=cutoff) | Q(started_at__isnull=True, created_at__lt=cutoff)
    )
    failed = 0
    with transaction.atomic():
        # Locked rows belong to a worker writing right now: alive, so not stale.
        stale = list(
            DiagnosisSession.objects.select_for_update(skip_locked=True)
            .filter(stuck_pending | stuck_running)
            .values_list("pk", "status")
        )
        for status in (DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING):
            pks = [pk for pk, stale_status in stale if stale_status == status]
            # The status condition again: a session that ended meanwhile keeps its outcome.
            failed += DiagnosisSession.objects.filter(pk__in=pks, status=status).update(
                status=DiagnosisSession.Status.FAILED,
                error=_stale_reason(status=status, older_than_seconds=older_than_seconds),
                finished_at=now,
                updated_at=now,
            )
        for pk, _status in stale:
            rule_evaluation_enqueue(session_pk=pk)
    return failed


def stale_sessions_schedule_ensure() -> Schedule:
    """Run the reaper every few minutes on the django-q2 cluster (idempotent)."""
    schedule, _ = Schedule.objects.update_or_create(
        name=STALE_SESSIONS_SCHEDULE_NAME,
        defaults={
            "func": "diagnosis.tasks.stale_sessions_fail",
            "schedule_type": Schedule.MINUTES,
            "minutes": STALE_SESSIONS_EVERY_MINUTES,
            "repeats": -1,
        },
    )
    return schedule
