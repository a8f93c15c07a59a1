import pytest
from django.core.exceptions import ValidationError

from diagnosis.models import SessionReview
from diagnosis.services.reviews import review_record
from feedback.models import BadCase
from tests.factories import CompletedSessionFactory, StaffUserFactory

pytestmark = pytest.mark.django_db


def test_agreeing_records_the_verifiers_own_verdict_as_expected():
    session = CompletedSessionFactory(verdict="LOW_CONFID")
    review = review_record(
        session=session, reviewer=StaffUserFactory(), opinion="agree", expected_verdict="PASS", note=" 合理 "
    )
    assert (review.opinion, review.expected_verdict, review.note) == ("agree", "LOW_CONFID", "合理")


def test_disagreeing_needs_a_different_expected_verdict():
    session = CompletedSessionFactory(verdict="PASS")
    reviewer = StaffUserFactory()
    for expected in ("", "PASS", "MAYBE"):
        with pytest.raises(ValidationError):
            review_record(session=session, reviewer=reviewer, opinion="disagree", expected_verdict=expected)
    review = review_record(session=session, reviewer=reviewer, opinion="disagree", expected_verdict="REJECT")
    assert review.expected_verdict == "REJECT"
    assert SessionReview.objects.count() == 1


def test_an_unknown_opinion_is_refused():
    with pytest.raises(ValidationError):
        review_record(session=CompletedSessionFactory(), reviewer=StaffUserFactory(), opinion="maybe")


def test_a_review_resolves_the_open_user_report():
    session = CompletedSessionFactory(feedback="not_useful")
    BadCase.objects.create(session=session)
    review_record(session=session, reviewer=StaffUserFactory(), opinion="agree")
    assert BadCase.objects.get().resolved is True
