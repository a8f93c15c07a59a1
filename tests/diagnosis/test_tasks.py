from datetime import timedelta

import pytest
from django.utils import timezone

from diagnosis import tasks
from diagnosis.models import DiagnosisSession
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
