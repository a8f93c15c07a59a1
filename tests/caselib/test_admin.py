"""The reviewers' queue of candidate cases in the admin: filter by status, approve, reject."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from caselib.models import CaseLibrary
from tests.factories import CaseLibraryFactory, ReviewerFactory, StaffUserFactory

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:caselib_caselibrary_changelist")
Status = CaseLibrary.Status


@pytest.fixture
def reviewer(client):
    user = ReviewerFactory()
    client.force_login(user)
    return user


def test_the_queue_lists_candidates_with_chinese_labels(client, reviewer):
    CaseLibraryFactory(title="billing 账单积压", status=Status.CANDIDATE)
    CaseLibraryFactory(title="ledger-service 复制延迟", status=Status.APPROVED)

    response = client.get(f"{CHANGELIST}?status__exact=candidate")

    assert [case.title for case in response.context["cl"].result_list] == ["billing 账单积压"]
    page = response.content.decode()
    for label in ("审核状态", "待审核", "已批准", "已驳回", "审核人", "批准所选案例", "驳回所选案例"):
        assert label in page


@pytest.mark.parametrize(("action", "status"), [("approve", Status.APPROVED), ("reject", Status.REJECTED)])
def test_a_reviewer_approves_or_rejects_candidates(client, reviewer, action, status):
    chosen = CaseLibraryFactory(status=Status.CANDIDATE)
    other = CaseLibraryFactory(status=Status.CANDIDATE)

    response = client.post(CHANGELIST, {"action": action, "_selected_action": [chosen.pk]}, follow=True)

    chosen.refresh_from_db()
    other.refresh_from_db()
    assert (chosen.status, chosen.reviewed_by) == (status, reviewer.username)
    assert chosen.reviewed_at is not None
    assert other.status == Status.CANDIDATE
    assert ("已批准 1 个案例。" if action == "approve" else "已驳回 1 个案例。") in response.content.decode()


def test_the_status_is_changed_by_the_actions_only(client, reviewer):
    case = CaseLibraryFactory(status=Status.CANDIDATE)
    page = client.get(reverse("admin:caselib_caselibrary_change", args=[case.pk])).content.decode()
    assert 'name="status"' not in page


def test_staff_without_the_review_permission_cannot_approve(client):
    staff = StaffUserFactory()
    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=("view_caselibrary", "change_caselibrary"))
    )
    client.force_login(staff)
    case = CaseLibraryFactory(status=Status.CANDIDATE)

    page = client.get(CHANGELIST).content.decode()
    client.post(CHANGELIST, {"action": "approve", "_selected_action": [case.pk]})

    assert "批准所选案例" not in page
    case.refresh_from_db()
    assert case.status == Status.CANDIDATE
