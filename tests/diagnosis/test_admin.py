import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession, SessionReview
from diagnosis.services.reviewers import reviewer_group_ensure
from feedback.models import BadCase
from tests.factories import (
    AgentStepFactory,
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    StaffUserFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:diagnosis_diagnosissession_changelist")
# auth session, user, user + group permissions, the page count, the page of rows: whatever the table size.
CHANGELIST_QUERIES = 6


def change_url(session: DiagnosisSession) -> str:
    return reverse("admin:diagnosis_diagnosissession_change", args=[session.pk])


@pytest.fixture
def reviewer(client):
    user = StaffUserFactory()
    user.groups.add(reviewer_group_ensure())
    client.force_login(user)
    return user


@pytest.fixture
def superuser(client):
    user = StaffUserFactory(is_superuser=True)
    client.force_login(user)
    return user


def listed_ids(client, query: str = "") -> set[str]:
    response = client.get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    return {session.session_id for session in response.context["cl"].result_list}


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_changelist_shows_every_output_type_with_its_columns(client, reviewer, verdict):
    session = CompletedSessionFactory(verdict=verdict, feedback="useful")
    page = client.get(CHANGELIST).content.decode()
    assert f'<span class="verdict-badge verdict-{verdict}">{verdict}</span>' in page
    assert session.get_output_type_display() in page
    assert "证据支撑度" in page
    assert "引用核验" in page
    assert "已审核" in page


def test_changelist_renders_sessions_still_running_or_failed(client, reviewer):
    DiagnosisSessionFactory(session_id="running", status=DiagnosisSession.Status.RUNNING)
    DiagnosisSessionFactory(session_id="failed", status=DiagnosisSession.Status.FAILED, error="boom")
    assert listed_ids(client) == {"running", "failed"}


@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_change_page_lays_out_claims_bindings_and_verdicts(client, reviewer, verdict):
    session = CompletedSessionFactory(verdict=verdict)
    page = client.get(change_url(session)).content.decode()
    assert "断言、引用核验与校验结论" in page
    assert "order-service 存在 firing 状态的 HighMemoryUsage 告警" in page
    assert 'data-round="1"' in page
    assert f"verdict-{verdict}" in page
    assert "规则评分" in page
    assert "has_successful_tool_call" in page
    assert "工具调用摘要" in page
    assert "&quot;claim_id&quot;" not in page
    if verdict == "REJECT":
        assert "evidence.excerpt_mismatch" in page
        assert "与证据矛盾" in page
    else:
        assert "<mark>HighMemoryUsage firing service=order-service</mark>" in page
        assert "直接观测" in page


def test_change_page_puts_both_rounds_of_a_retried_session_side_by_side(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS", retried=True)
    page = client.get(change_url(session)).content.decode()
    assert 'data-round="1"' in page
    assert 'data-round="2"' in page
    assert "内存升高由订单缓存泄漏引起" in page
    assert "补充取证上下文" in page
    assert "仅补充以上断言相关证据" in page


def test_change_page_shows_steps_and_invocations_read_only(client, reviewer):
    session = CompletedSessionFactory()
    page = client.get(change_url(session)).content.decode()
    invocation = session.tool_invocations.get()
    assert f"#{invocation.pk}" in page
    assert "service=order-service" in page
    assert 'name="steps-0-thought"' not in page
    assert 'type="submit" value="保存"' not in page


@pytest.mark.parametrize("sessions", [30, 300])
def test_changelist_costs_a_fixed_number_of_queries(
    client, reviewer, django_assert_max_num_queries, sessions
):
    owner = UserFactory()
    created = DiagnosisSessionFactory.create_batch(sessions, owner=owner, verdict="REJECT")
    SessionReview.objects.bulk_create(
        SessionReview(session=session, opinion="agree") for session in created[::3]
    )
    with django_assert_max_num_queries(CHANGELIST_QUERIES):
        response = client.get(f"{CHANGELIST}?needs_review=yes")
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == min(50, sessions - len(created[::3]))


def test_changelist_query_count_does_not_grow_with_rows(client, reviewer):
    DiagnosisSessionFactory.create_batch(3, owner=reviewer)
    with CaptureQueriesContext(connection) as few:
        client.get(CHANGELIST)
    DiagnosisSessionFactory.create_batch(60, owner=reviewer)
    with CaptureQueriesContext(connection) as many:
        client.get(CHANGELIST)
    assert len(many) == len(few)


def test_needs_review_lists_unreviewed_low_verdicts_and_open_user_reports(client, reviewer):
    CompletedSessionFactory(session_id="reject", verdict="REJECT")
    CompletedSessionFactory(session_id="low", verdict="LOW_CONFID")
    CompletedSessionFactory(session_id="pass", verdict="PASS")
    reported = CompletedSessionFactory(session_id="reported", verdict="PASS", feedback="not_useful")
    BadCase.objects.create(session=reported)
    reviewed = CompletedSessionFactory(session_id="reviewed", verdict="REJECT")
    SessionReview.objects.create(session=reviewed, opinion="agree", expected_verdict="REJECT")
    assert listed_ids(client, "needs_review=yes") == {"reject", "low", "reported"}


def test_recording_a_review_takes_the_session_out_of_the_queue(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS", feedback="not_useful")
    BadCase.objects.create(session=session)
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]),
        {"opinion": "disagree", "expected_verdict": "LOW_CONFID", "note": "回答没有回答内存原因"},
    )
    assert response.status_code == 302
    review = SessionReview.objects.get()
    assert (review.reviewer, review.opinion, review.expected_verdict) == (reviewer, "disagree", "LOW_CONFID")
    assert listed_ids(client, "needs_review=yes") == set()
    assert listed_ids(client, "needs_review=disagreed") == {session.session_id}
    page = client.get(change_url(session)).content.decode()
    assert "不同意校验结论" in page
    assert "回答没有回答内存原因" in page


def test_a_disagreement_without_another_verdict_is_refused(client, reviewer):
    session = CompletedSessionFactory(verdict="PASS")
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]),
        {"opinion": "disagree", "expected_verdict": "PASS"},
        follow=True,
    )
    assert "不同意时，期望结论必须与校验结论不同" in response.content.decode()
    assert not SessionReview.objects.exists()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=FAILED", {"failed"}),
        ("output_type=DEGRADED", {"reject"}),
        ("verdict=PASS", {"pass"}),
        ("gatekeeper_severity=reject", {"reject"}),
        ("feedback=useful", {"pass"}),
        ("feedback=none", {"reject", "failed"}),
        ("engine=llm", {"failed"}),
        ("q=reject", {"reject"}),
    ],
)
def test_changelist_filters_and_search(client, reviewer, query, expected):
    CompletedSessionFactory(session_id="pass", verdict="PASS", feedback="useful")
    CompletedSessionFactory(session_id="reject", verdict="REJECT")
    DiagnosisSessionFactory(session_id="failed", status=DiagnosisSession.Status.FAILED, engine="llm")
    assert listed_ids(client, query) == expected


def test_reviewers_cannot_edit_add_or_delete_sessions(client, reviewer):
    session = CompletedSessionFactory()
    response = client.post(change_url(session), {"query": "changed", "status": "FAILED"})
    assert response.status_code == 403
    assert client.get(reverse("admin:diagnosis_diagnosissession_add")).status_code == 403
    assert (
        client.post(reverse("admin:diagnosis_diagnosissession_delete", args=[session.pk])).status_code == 403
    )
    session.refresh_from_db()
    assert session.query != "changed"
    assert session.status == DiagnosisSession.Status.COMPLETED


def test_sessions_are_audit_records_nobody_deletes_not_even_a_superuser(client, superuser):
    session = CompletedSessionFactory()
    AgentStepFactory(session=session)
    delete_url = reverse("admin:diagnosis_diagnosissession_delete", args=[session.pk])
    assert client.post(delete_url, {"post": "yes"}).status_code == 403
    changelist = client.get(CHANGELIST)
    assert "delete_selected" not in dict(changelist.context["action_form"].fields["action"].choices)
    response = client.post(CHANGELIST, {"action": "delete_selected", "_selected_action": [session.pk]})
    assert response.status_code == 302
    inlines = client.get(change_url(session)).context["inline_admin_formsets"]
    assert inlines and not any(inline.has_delete_permission for inline in inlines)
    assert DiagnosisSession.objects.filter(pk=session.pk).exists()
    assert session.steps.exists()


def test_reviewers_cannot_promote_sessions_to_cases(client, reviewer):
    session = CompletedSessionFactory()
    response = client.post(reverse("admin:diagnosis_diagnosissession_promote", args=[session.pk]))
    assert response.status_code == 403
    assert "沉淀到案例库" not in client.get(change_url(session)).content.decode()
    assert not CaseLibrary.objects.exists()


def test_people_without_the_review_permission_cannot_review(client):
    client.force_login(StaffUserFactory())
    session = CompletedSessionFactory()
    response = client.post(
        reverse("admin:diagnosis_diagnosissession_review", args=[session.pk]), {"opinion": "agree"}
    )
    assert response.status_code == 403
    assert not SessionReview.objects.exists()


def test_promoting_from_the_change_page_creates_a_manual_case(client, superuser):
    session = CompletedSessionFactory()
    response = client.post(reverse("admin:diagnosis_diagnosissession_promote", args=[session.pk]))
    case = CaseLibrary.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("admin:caselib_caselibrary_change", args=[case.pk])
    assert (case.diagnosis_id, case.source_type, case.created_by) == (
        session.session_id,
        CaseLibrary.SourceType.MANUAL,
        superuser.username,
    )


def test_promote_action_creates_cases_for_completed_sessions_only(client, superuser):
    completed = CompletedSessionFactory()
    running = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    response = client.post(
        CHANGELIST,
        {"action": "promote_to_case_library", "_selected_action": [completed.pk, running.pk]},
        follow=True,
    )
    assert CaseLibrary.objects.get().diagnosis_id == completed.session_id
    page = response.content.decode()
    assert "已创建 1 个案例" in page
    assert "只有已完成的诊断才能沉淀为案例" in page


def test_reviewers_see_cases_and_bad_cases(client, reviewer):
    session = CompletedSessionFactory()
    CaseLibrary.objects.create(
        diagnosis_id=session.session_id, title="order-service 内存告警", service="order-service"
    )
    BadCase.objects.create(session=CompletedSessionFactory(query="没用的回答"), reported_by=session.owner)
    cases = client.get(reverse("admin:caselib_caselibrary_changelist")).content.decode()
    assert "order-service 内存告警" in cases
    bad_cases = client.get(reverse("admin:feedback_badcase_changelist")).content.decode()
    assert "没用的回答" in bad_cases


def test_the_change_page_marks_the_claims_the_user_was_shown(client, reviewer):
    shown = CompletedSessionFactory(verdict="PASS")
    degraded = CompletedSessionFactory(verdict="REJECT")

    assert "已向用户展示" in client.get(change_url(shown)).content.decode()
    assert "已向用户展示" not in client.get(change_url(degraded)).content.decode()


def test_reviewers_see_a_failed_sessions_error_id_and_raw_cause(client, reviewer):
    session = DiagnosisSessionFactory(
        status=DiagnosisSession.Status.FAILED,
        error="AttributeError: 'str' object has no attribute 'message'",
        error_id="ab12cd34",
    )
    page = client.get(change_url(session)).content.decode()
    assert "错误编号" in page
    assert "ab12cd34" in page
    assert "AttributeError: &#x27;str&#x27; object has no attribute &#x27;message&#x27;" in page
