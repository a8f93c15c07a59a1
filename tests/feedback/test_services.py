import pytest
from django.core.exceptions import ValidationError

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession
from feedback.models import BadCase
from feedback.services import FeedbackResult, feedback_record
from tests.factories import CompletedSessionFactory, DiagnosisSessionFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_useful_stores_the_feedback_and_returns_the_case():
    session = CompletedSessionFactory()
    result = feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    case = CaseLibrary.objects.get()
    assert (result.success, result.case_id) == (True, case.case_id)
    session.refresh_from_db()
    assert (session.feedback, session.status) == ("useful", DiagnosisSession.Status.COMPLETED)


def test_not_useful_records_a_bad_case_and_leaves_the_status_alone():
    session = CompletedSessionFactory()
    result = feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    assert (result.success, result.case_id) == (True, None)
    bad_case = BadCase.objects.get()
    assert (bad_case.session, bad_case.reported_by, bad_case.resolved) == (session, session.owner, False)
    session.refresh_from_db()
    assert (session.feedback, session.status) == ("not_useful", DiagnosisSession.Status.COMPLETED)


def test_not_useful_on_a_failed_session_is_accepted():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED)
    feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    session.refresh_from_db()
    assert (session.feedback, session.status) == ("not_useful", DiagnosisSession.Status.FAILED)


def test_useful_on_a_failed_session_is_recorded_without_a_case():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED)
    result = feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    assert result == FeedbackResult(success=True, message="反馈已记录；失败的诊断不沉淀为案例", case_id=None)
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert (session.feedback, session.status) == ("useful", DiagnosisSession.Status.FAILED)


def test_a_later_useful_after_not_useful_keeps_the_bad_case_for_reviewers():
    session = CompletedSessionFactory()
    feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    session.refresh_from_db()
    assert session.feedback == "useful"
    assert BadCase.objects.filter(session=session).exists()
    assert CaseLibrary.objects.filter(diagnosis_id=session.session_id).exists()


@pytest.mark.parametrize("value", ["maybe", "", "USEFUL"])
def test_other_values_are_validation_errors(value):
    session = CompletedSessionFactory()
    with pytest.raises(ValidationError):
        feedback_record(session_id=session.session_id, feedback=value, user=session.owner)


def test_unknown_and_foreign_sessions_are_not_found():
    session = CompletedSessionFactory()
    with pytest.raises(DiagnosisSession.DoesNotExist):
        feedback_record(session_id="no-such-session", feedback="useful", user=session.owner)
    with pytest.raises(DiagnosisSession.DoesNotExist):
        feedback_record(session_id=session.session_id, feedback="useful", user=UserFactory())


def test_staff_may_give_feedback_on_any_session():
    session = CompletedSessionFactory()
    result = feedback_record(session_id=session.session_id, feedback="useful", user=StaffUserFactory())
    assert result.case_id is not None


@pytest.mark.parametrize("status", [DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING])
def test_an_unfinished_session_takes_no_feedback_yet(status):
    session = DiagnosisSessionFactory(status=status)
    with pytest.raises(ValidationError) as refused:
        feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    assert set(refused.value.message_dict) == {"sessionId"}
    assert not BadCase.objects.exists()
    session.refresh_from_db()
    assert (session.feedback, session.status) == (None, status)
