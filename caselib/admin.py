"""The case library in admin: browse, search and curate cases, and the reviewers' queue of candidates.

A user's "useful" puts a session forward as a candidate; a reviewer (`caselib.review_case`) approves
it, which makes it retrievable by `lookup_knowledge`, or rejects it. Edits need the caselib permissions.
The older fields carry no verbose names, so their headings (form labels, columns, filters) are named
here in the reviewers' language.
"""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from caselib.models import CaseLibrary
from caselib.services import cases_approve, cases_reject

REVIEW_PERMISSION = "caselib.review_case"

LABELS = {
    "title": _("title"),
    "fault_category": _("fault category"),
    "service": _("service"),
    "alert_name": _("alert"),
    "error_code": _("error code"),
    "root_cause": _("root cause"),
    "solution": _("solution"),
}


class CaseLibraryForm(forms.ModelForm):
    class Meta:
        model = CaseLibrary
        fields = tuple(LABELS)
        labels = LABELS


class SourceTypeFilter(admin.ChoicesFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = _("source")


class FaultCategoryFilter(admin.AllValuesFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = _("fault category")


def column(field_name: str):
    """A list column for a model field under its translated heading."""

    @admin.display(description=LABELS[field_name], ordering=field_name)
    def value(case: CaseLibrary) -> str:
        return getattr(case, field_name) or "—"

    value.__name__ = f"{field_name}_column"
    return value


@admin.register(CaseLibrary)
class CaseLibraryAdmin(admin.ModelAdmin):
    form = CaseLibraryForm
    list_display = (
        column("title"),
        "status",
        column("fault_category"),
        column("service"),
        column("alert_name"),
        column("error_code"),
        "source",
        "author",
        "reviewed_by",
        "created",
    )
    list_filter = ("status", ("source_type", SourceTypeFilter), ("fault_category", FaultCategoryFilter))
    search_fields = ("title", "=diagnosis_id", "service", "alert_name", "error_code", "root_cause")
    search_help_text = _("Search by title, session id, service, alert, error code or root cause.")
    readonly_fields = (
        "case",
        "diagnosis",
        "status",
        "reviewed_by",
        "reviewed_at",
        "source",
        "author",
        "created",
    )
    fields = (
        "case",
        "diagnosis",
        "status",
        "title",
        "fault_category",
        "service",
        "alert_name",
        "error_code",
        "root_cause",
        "solution",
        "source",
        "author",
        "created",
        "reviewed_by",
        "reviewed_at",
    )
    actions = ("approve", "reject")
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def has_review_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(REVIEW_PERMISSION)

    @admin.display(description=_("case id"))
    def case(self, case: CaseLibrary) -> str:
        return str(case.case_id)

    @admin.display(description=_("diagnosis session"))
    def diagnosis(self, case: CaseLibrary) -> str:
        url = reverse("admin:diagnosis_diagnosissession_changelist") + f"?q={case.diagnosis_id}"
        return format_html('<a href="{}">{}</a>', url, case.diagnosis_id)

    @admin.display(description=_("source"), ordering="source_type")
    def source(self, case: CaseLibrary) -> str:
        return case.get_source_type_display()

    @admin.display(description=_("created by"), ordering="created_by")
    def author(self, case: CaseLibrary) -> str:
        return case.created_by

    @admin.display(
        description=format_lazy("{}（{}）", _("created"), settings.TIME_ZONE), ordering="created_at"
    )
    def created(self, case: CaseLibrary) -> str:
        return timezone.localtime(case.created_at).strftime("%Y-%m-%d %H:%M:%S")

    @admin.action(description="批准所选案例（批准后可被知识检索引用）", permissions=["review"])
    def approve(self, request: HttpRequest, queryset) -> None:
        count = cases_approve(cases=queryset, reviewer=request.user.get_username())
        self.message_user(request, f"已批准 {count} 个案例。", messages.SUCCESS)

    @admin.action(description="驳回所选案例（不会被知识检索引用）", permissions=["review"])
    def reject(self, request: HttpRequest, queryset) -> None:
        count = cases_reject(cases=queryset, reviewer=request.user.get_username())
        self.message_user(request, f"已驳回 {count} 个案例。", messages.SUCCESS)
