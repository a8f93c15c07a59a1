from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import OrmQ, Schedule
from django_q.signals import post_spawn
from django_q.signing import SignedPackage

from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions_maintenance import stale_sessions_fail, stale_sessions_schedule_ensure
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

LIMIT = 900
Status = DiagnosisSession.Status


def _session(*, status: str, age_seconds: int, started: bool = True) -> DiagnosisSession:
    session = DiagnosisSessionFactory(status=status)
    then = timezone.now() - timedelta(seconds=age_seconds)
    # created_at is auto_now_add: only a queryset update can age it.
    DiagnosisSession.objects.filter(pk=session.pk).update(
        created_at=then, started_at=then if started else None
    )
    return session


def test_running_session_older_than_the_limit_ends_failed_with_the_reason():
    session = _session(status=Status.RUNNING, age_seconds=LIMIT + 60)

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 1

    session.refresh_from_db()
    assert session.status == Status.FAILED
    assert session.error == "会话执行超过 900 秒仍未结束（后台工作进程可能已退出），已标记为失败。"
    assert session.answer == f"诊断执行失败（错误编号 {session.error_id}），请稍后重试或联系管理员。"
    assert session.finished_at is not None


def test_pending_session_older_than_the_limit_ends_failed_with_the_reason():
    session = _session(status=Status.PENDING, age_seconds=LIMIT + 60, started=False)

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 1

    session.refresh_from_db()
    assert session.status == Status.FAILED
    assert session.error == "会话排队超过 900 秒仍未开始执行（后台工作进程可能未运行），已标记为失败。"


def test_running_session_without_start_time_is_judged_by_its_creation():
    session = _session(status=Status.RUNNING, age_seconds=LIMIT + 60, started=False)

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 1

    session.refresh_from_db()
    assert session.status == Status.FAILED


def test_sessions_within_the_limit_keep_running():
    running = _session(status=Status.RUNNING, age_seconds=LIMIT - 60)
    pending = _session(status=Status.PENDING, age_seconds=LIMIT - 60, started=False)

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 0

    running.refresh_from_db()
    pending.refresh_from_db()
    assert (running.status, pending.status) == (Status.RUNNING, Status.PENDING)


def test_ended_sessions_keep_their_outcome_however_old():
    completed = _session(status=Status.COMPLETED, age_seconds=LIMIT * 10)
    DiagnosisSession.objects.filter(pk=completed.pk).update(error="")

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 0

    completed.refresh_from_db()
    assert (completed.status, completed.error) == (Status.COMPLETED, "")


def test_a_session_that_started_recently_after_queueing_long_is_not_stale():
    session = _session(status=Status.RUNNING, age_seconds=LIMIT * 2)
    DiagnosisSession.objects.filter(pk=session.pk).update(started_at=timezone.now())

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 0


def test_failed_stale_sessions_get_their_rule_evaluation_queued(django_capture_on_commit_callbacks):
    session = _session(status=Status.RUNNING, age_seconds=LIMIT + 60)

    with django_capture_on_commit_callbacks(execute=True):
        stale_sessions_fail(older_than_seconds=LIMIT)

    task = SignedPackage.loads(OrmQ.objects.get().payload)
    assert (task["func"], task["args"]) == ("diagnosis.tasks.rule_evaluation_task", (session.pk, 1))


def test_reaper_schedule_is_created_once_every_minute():
    stale_sessions_schedule_ensure()
    stale_sessions_schedule_ensure()

    schedule = Schedule.objects.get(name="stale_sessions_fail")
    assert (schedule.func, schedule.schedule_type, schedule.minutes, schedule.repeats) == (
        "diagnosis.tasks.stale_sessions_fail",
        Schedule.MINUTES,
        1,
        -1,
    )


def test_a_running_session_without_a_heartbeat_has_lost_its_worker_and_ends_failed(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"WORKER_LOST_AFTER_SECONDS": 60}
    lost = _session(status=Status.RUNNING, age_seconds=120)
    alive = _session(status=Status.RUNNING, age_seconds=120)
    DiagnosisSession.objects.filter(pk=lost.pk).update(updated_at=timezone.now() - timedelta(seconds=61))
    DiagnosisSession.objects.filter(pk=alive.pk).update(updated_at=timezone.now() - timedelta(seconds=5))

    assert stale_sessions_fail(older_than_seconds=LIMIT) == 1

    lost.refresh_from_db()
    alive.refresh_from_db()
    assert (lost.status, alive.status) == (Status.FAILED, Status.RUNNING)
    assert lost.error == "执行该会话的后台工作进程已停止（会话已没有心跳），已标记为失败。"


def test_migrate_schedules_the_reaper():
    """The test database was built by `migrate`: its post_migrate signal left the schedule."""
    assert Schedule.objects.filter(
        name="stale_sessions_fail", func="diagnosis.tasks.stale_sessions_fail"
    ).exists()


def test_a_worker_starting_schedules_the_reaper_and_reaps_what_a_dead_worker_left(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"WORKER_LOST_AFTER_SECONDS": 60}
    Schedule.objects.all().delete()
    left_behind = _session(status=Status.RUNNING, age_seconds=120)
    DiagnosisSession.objects.filter(pk=left_behind.pk).update(
        updated_at=timezone.now() - timedelta(seconds=90)
    )

    post_spawn.send(sender="django_q", proc_name="Process-1:1")

    left_behind.refresh_from_db()
    assert left_behind.status == Status.FAILED
    assert Schedule.objects.filter(name="stale_sessions_fail").count() == 1
