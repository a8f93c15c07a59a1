"""Bad cases (not_useful feedback) for reviewers; a review of the session resolves its bad case."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from feedback.models import BadCase


@admin.register(BadCase)
class BadCaseAdmin(admin.ModelAdmin):
    list_display = ("diagnosis", "question", "reported_by", "resolved", "created_at")
    list_filter = ("resolved",)
    list_select_related = ("session", "reported_by")
    search_fields = ("=session__session_id", "session__query")
    readonly_fields = ("diagnosis", "question", "reported_by", "created_at")
    fields = ("diagnosis", "question", "reported_by", "comment", "resolved", "created_at")

    def has_add_permission(self, request):
        return False

    @admin.display(description=_("diagnosis session"))
    def diagnosis(self, bad_case: BadCase) -> str:
        url = reverse("admin:diagnosis_diagnosissession_change", args=[bad_case.session_id])
        return format_html('<a href="{}">{}</a>', url, bad_case.session.session_id)

    @admin.display(description=_("question"))
    def question(self, bad_case: BadCase) -> str:
        return bad_case.session.query[:80]
