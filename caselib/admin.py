"""The case library in admin: browse, search and curate cases (edits need the caselib permissions)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from caselib.models import CaseLibrary


@admin.register(CaseLibrary)
class CaseLibraryAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "fault_category",
        "service",
        "alert_name",
        "error_code",
        "source_type",
        "created_by",
        "created_at",
    )
    list_filter = ("source_type", "fault_category")
    search_fields = ("title", "=diagnosis_id", "service", "alert_name", "error_code", "root_cause")
    readonly_fields = ("case_id", "diagnosis", "source_type", "created_by", "created_at")
    fields = (
        "case_id",
        "diagnosis",
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
    )
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    @admin.display(description=_("diagnosis session"))
    def diagnosis(self, case: CaseLibrary) -> str:
        url = reverse("admin:diagnosis_diagnosissession_changelist") + f"?q={case.diagnosis_id}"
        return format_html('<a href="{}">{}</a>', url, case.diagnosis_id)
