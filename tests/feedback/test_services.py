import pytest
from django.core.exceptions import ValidationError

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession
from diagnosis.services.cases import case_create_from_session
from feedback.models import BadCase
from feedback.services import FeedbackResult, feedback_record
from tests.factories import (
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    ReviewerFactory,
    StaffUserFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_useful_stores_the_feedback_and_returns_the_candidate_case():
    session = CompletedSessionFactory()
    result = feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    case = CaseLibrary.objects.get()
    assert (result.success, result.case_id) == (True, case.case_id)
    assert result.message == "反馈已记录，已作为候选案例提交审核。"
    assert (case.status, case.reviewed_by, case.reviewed_at) == (CaseLibrary.Status.CANDIDATE, "", None)
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


@pytest.mark.parametrize("other", [StaffUserFactory, ReviewerFactory])
def test_only_the_owner_gives_feedback_staff_and_reviewers_included(other):
    session = CompletedSessionFactory()
    with pytest.raises(DiagnosisSession.DoesNotExist):
        feedback_record(session_id=session.session_id, feedback="not_useful", user=other())
    session.refresh_from_db()
    assert session.feedback is None
    assert not BadCase.objects.exists()


def test_useful_on_a_session_without_verified_findings_is_recorded_without_a_case():
    session = CompletedSessionFactory(verdict="REJECT")
    result = feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    assert result == FeedbackResult(
        success=True, message="反馈已记录；该诊断没有经过核实的结论，不能沉淀为案例。", case_id=None
    )
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert session.feedback == "useful"


def test_useful_then_not_useful_withdraws_the_candidate_and_queues_the_bad_case():
    session = CompletedSessionFactory()
    feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    assert not CaseLibrary.objects.filter(diagnosis_id=session.session_id).exists()
    assert BadCase.objects.get(session=session).resolved is False


def test_not_useful_on_an_approved_case_takes_it_back_to_the_reviewers():
    session = CompletedSessionFactory()
    case, _ = case_create_from_session(
        session=session, created_by="reviewer", source_type=CaseLibrary.SourceType.MANUAL
    )
    assert case.status == CaseLibrary.Status.APPROVED
    feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    case.refresh_from_db()
    assert (case.status, case.reviewed_by, case.reviewed_at) == (CaseLibrary.Status.CANDIDATE, "", None)
    assert BadCase.objects.get(session=session).resolved is False


def test_not_useful_leaves_a_rejected_case_rejected_and_useful_does_not_revive_it():
    session = CompletedSessionFactory()
    case, _ = case_create_from_session(session=session)
    CaseLibrary.objects.filter(pk=case.pk).update(status=CaseLibrary.Status.REJECTED)
    feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    feedback_record(session_id=session.session_id, feedback="useful", user=session.owner)
    case.refresh_from_db()
    assert case.status == CaseLibrary.Status.REJECTED


@pytest.mark.parametrize("status", [DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING])
def test_an_unfinished_session_takes_no_feedback_yet(status):
    session = DiagnosisSessionFactory(status=status)
    with pytest.raises(ValidationError) as refused:
        feedback_record(session_id=session.session_id, feedback="not_useful", user=session.owner)
    assert set(refused.value.message_dict) == {"sessionId"}
    assert not BadCase.objects.exists()
    session.refresh_from_db()
    assert (session.feedback, session.status) == (None, status)
