"""A session never stays RUNNING (issue 14): django-q's timeout, a stopping worker and a task delivered
again after its worker died all end it FAILED with the cause; a live session's worker keeps it alive."""

import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.exceptions import TimeoutException

from diagnosis.models import DiagnosisSession
from diagnosis.services.session_lifecycle import WORKER_LOST_ERROR, session_execute
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db
Status = DiagnosisSession.Status


def _raise(error: BaseException):
    def body(session):
        raise error

    return body


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (
            TimeoutException("Task exceeded maximum timeout value (600 seconds)"),
            "TimeoutException: Task exceeded",
        ),
        (SystemExit("worker stopping"), "SystemExit: worker stopping"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
    ],
)
def test_a_timeout_or_a_stopping_worker_ends_the_session_failed_and_still_stops(error, cause):
    session = DiagnosisSessionFactory()

    with pytest.raises(type(error)):
        session_execute(session_pk=session.pk, body=_raise(error))

    session.refresh_from_db()
    assert session.status == Status.FAILED
    assert session.error.startswith(cause)
    assert session.finished_at is not None


def test_an_ordinary_error_ends_the_session_failed_without_raising():
    session = DiagnosisSessionFactory()

    ended = session_execute(session_pk=session.pk, body=_raise(ValueError("bad reply")))

    assert (ended.status, ended.error) == (Status.FAILED, "ValueError: bad reply")


def test_a_task_delivered_again_after_its_worker_died_fails_the_silent_running_session(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"WORKER_LOST_AFTER_SECONDS": 60}
    session = DiagnosisSessionFactory(status=Status.RUNNING)
    DiagnosisSession.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(seconds=61))
    ran = []

    ended = session_execute(session_pk=session.pk, body=ran.append)

    assert ran == []
    assert (ended.status, ended.error) == (Status.FAILED, WORKER_LOST_ERROR)
    assert ended.answer == f"诊断执行失败（错误编号 {ended.error_id}），请稍后重试或联系管理员。"


def test_a_duplicate_delivery_leaves_a_session_its_live_worker_is_running(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"WORKER_LOST_AFTER_SECONDS": 60}
    session = DiagnosisSessionFactory(status=Status.RUNNING)

    ended = session_execute(session_pk=session.pk, body=_raise(AssertionError("must not run")))

    assert (ended.status, ended.error) == (Status.RUNNING, "")


@pytest.mark.django_db(transaction=True)
def test_the_worker_touches_a_running_session_while_it_runs(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"HEARTBEAT_SECONDS": 0.05}
    session = DiagnosisSessionFactory()
    beats = []

    def slow_body(running):
        claimed_at = DiagnosisSession.objects.get(pk=running.pk).updated_at
        time.sleep(0.5)
        beats.append(DiagnosisSession.objects.get(pk=running.pk).updated_at - claimed_at)

    session_execute(session_pk=session.pk, body=slow_body)

    assert beats[0] >= timedelta(seconds=0.3)


def test_any_failure_shows_users_a_stable_message_with_an_error_id_and_keeps_the_cause_for_staff(caplog):
    session = DiagnosisSessionFactory()

    ended = session_execute(
        session_pk=session.pk, body=_raise(AttributeError("'str' object has no attribute 'message'"))
    )

    assert re.fullmatch(r"[0-9a-f]{8}", ended.error_id)
    assert ended.answer == f"诊断执行失败（错误编号 {ended.error_id}），请稍后重试或联系管理员。"
    assert ended.error == "AttributeError: 'str' object has no attribute 'message'"
    [logged] = [record for record in caplog.records if ended.error_id in record.getMessage()]
    assert logged.exc_info is not None
    assert session.session_id in logged.getMessage()


def test_each_failure_has_its_own_error_id():
    ids = {
        session_execute(session_pk=DiagnosisSessionFactory().pk, body=_raise(RuntimeError("x"))).error_id
        for _ in range(5)
    }
    assert len(ids) == 5
