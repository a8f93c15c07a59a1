from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone
from django_q.conf import Conf

from diagnosis import tasks
from diagnosis.models import DiagnosisSession
from diagnosis.services.rule_evaluation import rule_evaluation_run
from tests.factories import DiagnosisSessionFactory, ToolInvocationFactory

pytestmark = pytest.mark.django_db


def test_rule_evaluation_task_stores_the_rule_slot():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.COMPLETED)
    ToolInvocationFactory(
        session=session, retrieval_details={"evidence_status": "supported", "evidence_refs": []}
    )

    tasks.rule_evaluation_task(session.pk)

    session.refresh_from_db()
    assert session.self_evaluation["rule_evaluation"]["evidence_score"] == 30


def test_stale_sessions_task_uses_the_configured_limit(settings):
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "STALE_AFTER_SECONDS": 60}
    stale = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    fresh = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    DiagnosisSession.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(seconds=120))
    DiagnosisSession.objects.filter(pk=fresh.pk).update(started_at=timezone.now() - timedelta(seconds=30))

    assert tasks.stale_sessions_fail() == 1

    assert set(DiagnosisSession.objects.values_list("pk", "status")) == {
        (stale.pk, DiagnosisSession.Status.FAILED),
        (fresh.pk, DiagnosisSession.Status.RUNNING),
    }


def test_session_run_task_runs_the_session_to_its_end():
    session = DiagnosisSessionFactory(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警", engine="rules"
    )

    tasks.session_run_task(session.pk)

    session.refresh_from_db()
    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.answer


def test_a_rule_evaluation_that_meets_a_locked_database_is_queued_again(
    monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(Conf, "SYNC", True)
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.COMPLETED)
    ToolInvocationFactory(
        session=session, retrieval_details={"evidence_status": "supported", "evidence_refs": []}
    )
    attempts = []

    def locked_once(*, session_pk):
        attempts.append(session_pk)
        if len(attempts) == 1:
            raise OperationalError("database is locked")
        return rule_evaluation_run(session_pk=session_pk)

    monkeypatch.setattr(tasks, "rule_evaluation_run", locked_once)

    with django_capture_on_commit_callbacks(execute=True):
        tasks.rule_evaluation_task(session.pk)

    session.refresh_from_db()
    assert attempts == [session.pk, session.pk]
    assert session.self_evaluation["rule_evaluation"]["evidence_score"] == 30


def test_a_rule_evaluation_gives_up_after_its_last_attempt(monkeypatch):
    def always_locked(*, session_pk):
        raise OperationalError("database is locked")

    monkeypatch.setattr(tasks, "rule_evaluation_run", always_locked)

    with pytest.raises(OperationalError):
        tasks.rule_evaluation_task(DiagnosisSessionFactory().pk, tasks.RULE_EVALUATION_ATTEMPTS)
