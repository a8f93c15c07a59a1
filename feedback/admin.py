"""Bad cases (not_useful feedback) for reviewers; a review of the session resolves its bad case.

The model's fields carry no verbose names, so every heading is named here in the reviewers' language.
"""

from django import forms
from django.conf import settings
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from diagnosis.templatetags.desk_labels import local_time
from feedback.models import BadCase


class BadCaseForm(forms.ModelForm):
    class Meta:
        model = BadCase
        fields = ("comment", "resolved")
        labels = {"comment": _("comment"), "resolved": _("resolved")}


class ResolvedFilter(admin.BooleanFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = _("resolved")


@admin.register(BadCase)
class BadCaseAdmin(admin.ModelAdmin):
    form = BadCaseForm
    list_display = ("diagnosis", "question", "reporter", "is_resolved", "created")
    list_filter = (("resolved", ResolvedFilter),)
    list_select_related = ("session", "reported_by")
    search_fields = ("=session__session_id", "session__query")
    search_help_text = _("Search by exact session id or words in the question.")
    readonly_fields = ("diagnosis", "question", "reporter", "created")
    fields = ("diagnosis", "question", "reporter", "comment", "resolved", "created")

    def has_add_permission(self, request):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        bad_case = self.get_object(request, object_id)
        if bad_case is not None:
            subtitle = _("Bad case of session %(session)s") % {"session": bad_case.session.session_id}
            extra_context = {**(extra_context or {}), "subtitle": subtitle}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description=_("diagnosis session"))
    def diagnosis(self, bad_case: BadCase) -> str:
        url = reverse("admin:diagnosis_diagnosissession_change", args=[bad_case.session_id])
        return format_html('<a href="{}">{}</a>', url, bad_case.session.session_id)

    @admin.display(description=_("question"))
    def question(self, bad_case: BadCase) -> str:
        return bad_case.session.query[:80]

    @admin.display(description=_("reported by"), ordering="reported_by")
    def reporter(self, bad_case: BadCase) -> str:
        return bad_case.reported_by or "—"

    @admin.display(description=_("resolved"), boolean=True, ordering="resolved")
    def is_resolved(self, bad_case: BadCase) -> bool:
        return bad_case.resolved

    @admin.display(
        description=format_lazy("{}（{}）", _("created"), settings.TIME_ZONE), ordering="created_at"
    )
    def created(self, bad_case: BadCase) -> str:
        return local_time(bad_case.created_at)
