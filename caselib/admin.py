"""The case library in admin: browse, search and curate cases, and the reviewers' queue of candidates.

A user's "useful" puts a session forward as a candidate; a reviewer (`caselib.review_case`) approves
it, which makes it retrievable by `lookup_knowledge`, or rejects it. Edits need the caselib permissions.
"""

from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from caselib.models import CaseLibrary
from caselib.services import cases_approve, cases_reject

REVIEW_PERMISSION = "caselib.review_case"


@admin.register(CaseLibrary)
class CaseLibraryAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "status",
        "fault_category",
        "service",
        "alert_name",
        "error_code",
        "source_type",
        "created_by",
        "reviewed_by",
        "created_at",
    )
    list_filter = ("status", "source_type", "fault_category")
    search_fields = ("title", "=diagnosis_id", "service", "alert_name", "error_code", "root_cause")
    readonly_fields = (
        "case_id",
        "diagnosis",
        "status",
        "reviewed_by",
        "reviewed_at",
        "source_type",
        "created_by",
        "created_at",
    )
    fields = (
        "case_id",
        "diagnosis",
        "status",
        "title",
        "fault_category",
        "service",
        "alert_name",
        "error_code",
        "root_cause",
        "solution",
        "source_type",
        "created_by",
        "created_at",
        "reviewed_by",
        "reviewed_at",
    )
    actions = ("approve", "reject")
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVIEW_PERMISSION)

    @admin.display(description=_("diagnosis session"))
    def diagnosis(self, case: CaseLibrary) -> str:
        url = reverse("admin:diagnosis_diagnosissession_changelist") + f"?q={case.diagnosis_id}"
        return format_html('<a href="{}">{}</a>', url, case.diagnosis_id)

    @admin.action(description="批准所选案例（批准后可被知识检索引用）", permissions=["review"])
    def approve(self, request: HttpRequest, queryset) -> None:
        count = cases_approve(cases=queryset, reviewer=request.user.get_username())
        self.message_user(request, f"已批准 {count} 个案例。", messages.SUCCESS)

    @admin.action(description="驳回所选案例（不会被知识检索引用）", permissions=["review"])
    def reject(self, request: HttpRequest, queryset) -> None:
        count = cases_reject(cases=queryset, reviewer=request.user.get_username())
        self.message_user(request, f"已驳回 {count} 个案例。", messages.SUCCESS)
