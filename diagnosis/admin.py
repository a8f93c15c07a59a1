"""The reviewers' audit admin for diagnosis sessions.

Sessions are the pipeline's record, so nobody edits them here: everyone with view permission sees
them read-only, reviewers (`diagnosis.review_session`) record reviews, and whoever may add cases
promotes a session to the case library.

The changelist stays fast over a long history: a fixed number of queries per page ("reviewed" is an
EXISTS subquery, every filter has fixed choices), each filter served by an index in list order
(`-created_at, -id`), no full count (exact up to a cap, PostgreSQL's planner estimate above it), and a
search that tries the exact session id before anything else.
"""

from __future__ import annotations

import json

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import F, Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator, format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop

from caselib.models import CaseLibrary
from diagnosis.evaluation.case_export import cases_export_file
from diagnosis.models import AgentStep, DiagnosisSession, SessionReview, ToolInvocation
from diagnosis.presenters.answer import answer_review_html
from diagnosis.presenters.audit import audit_view
from diagnosis.selectors.audit import session_audit
from diagnosis.selectors.sessions import (
    needs_review_condition,
    row_query,
    session_review_annotated,
    session_rows,
)
from diagnosis.serializers import trace_url
from diagnosis.services.cases import case_create_from_session
from diagnosis.services.reviews import VERDICTS, review_record
from diagnosis.templatetags.desk_labels import code_text, local_time
from tools.sources import DEMO, DEMO_LABEL

# The audit page's bounds per tool call (issue 24): refs listed, characters of each ref's text.
AUDIT_REFS_SHOWN = 20
AUDIT_TEXT_CHARS = 300
REVIEW_PERMISSION = "diagnosis.review_session"
PROMOTE_PERMISSION = "caselib.add_caselibrary"
# Heavy columns the list never shows: leave them in the database.
LIST_DEFERRED_FIELDS = ("self_evaluation", "answer", "answer_record", "error", "alert_scope", "claims_request")
# Where a question is shown whole in a row: as a tooltip, the row's text cut shorter.
ROW_QUESTION_CHARS = 120


# Django's admin shows these (its screen-reader column headings) but its zh_Hans catalogue lacks
# them; naming them here keeps them in ours when `makemessages` runs.
DJANGO_ADMIN_MESSAGES = (
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
)

admin.site.site_header = _("Diagnosis review desk")
admin.site.site_title = _("Diagnosis review desk")
admin.site.index_title = _("Review desk")
# The app list beside every page took a quarter of a 1280 px screen from the sessions list; the
# breadcrumbs and the desk's home page navigate.
admin.site.enable_nav_sidebar = False

VERDICT_CHOICES = tuple((verdict, code_text(verdict)) for verdict in VERDICTS)

# Lists counted exactly up to this many rows; above it the count is PostgreSQL's estimate.
EXACT_COUNT_LIMIT = 1000
# From this offset on a page first picks its ids alone, then loads those rows.
DEEP_PAGE_OFFSET = 1000


class EstimatedCountPaginator(Paginator):
    """A paginator that never counts a whole large table and keeps deep pages cheap.

    It counts at most `EXACT_COUNT_LIMIT + 1` rows; when there are more, PostgreSQL's planner
    estimate for the filtered query (EXPLAIN: statistics, no scan) gives the page count, so deep
    pages still open. SQLite, the small embedded default, counts exactly.

    A deep page skips its offset over the ids in the list's index alone, then loads and annotates
    only its own rows: otherwise every skipped row would be read and annotated too.
    """

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        if bottom < DEEP_PAGE_OFFSET:
            return super().page(number)
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        ids = list(self.object_list.values_list("pk", flat=True)[bottom:top])
        return self._get_page(self.object_list.filter(pk__in=ids), number, self)

    @cached_property
    def count(self) -> int:
        rows = self.object_list.order_by()
        capped = rows[: EXACT_COUNT_LIMIT + 1].count()
        if capped <= EXACT_COUNT_LIMIT:
            return capped
        if connections[rows.db].vendor != "postgresql":
            return rows.count()
        (plan,) = json.loads(rows.explain(format="json"))
        return max(capped, int(plan["Plan"]["Plan Rows"]))


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter on one column with fixed choices: no query to build its options."""

    field_name = ""
    options: tuple = ()

    def lookups(self, request, model_admin):
        return self.options

    def queryset(self, request, queryset):
        return queryset.filter(**{self.field_name: self.value()}) if self.value() else queryset


class StatusFilter(FixedChoicesFilter):
    title = _("status")
    parameter_name = field_name = "status"
    options = DiagnosisSession.Status.choices


class OutputTypeFilter(FixedChoicesFilter):
    title = _("output type")
    parameter_name = field_name = "output_type"
    options = DiagnosisSession.OutputType.choices


class VerdictFilter(FixedChoicesFilter):
    title = _("verdict")
    parameter_name = field_name = "verdict"
    options = VERDICT_CHOICES


class GatekeeperSeverityFilter(FixedChoicesFilter):
    title = _("gatekeeper severity")
    parameter_name = field_name = "gatekeeper_severity"
    options = tuple((severity, code_text(severity)) for severity in ("none", "low_confid", "reject"))


class KindFilter(FixedChoicesFilter):
    title = _("kind")
    parameter_name = field_name = "kind"
    options = DiagnosisSession.Kind.choices


class EngineFilter(FixedChoicesFilter):
    title = _("engine")
    parameter_name = field_name = "engine"
    options = tuple((engine, code_text(engine)) for engine in ("rules", "llm"))


class FeedbackFilter(admin.SimpleListFilter):
    title = _("feedback")
    parameter_name = "feedback"

    def lookups(self, request, model_admin):
        return (*DiagnosisSession.Feedback.choices, ("none", _("no feedback")))

    def queryset(self, request, queryset):
        if self.value() == "none":
            return queryset.filter(feedback__isnull=True)
        return queryset.filter(feedback=self.value()) if self.value() else queryset


class NeedsReviewFilter(admin.SimpleListFilter):
    title = _("needs review")
    parameter_name = "needs_review"

    def lookups(self, request, model_admin):
        return (("yes", _("needs review")), ("disagreed", _("reviewer disagreed with the verifier")))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(needs_review_condition())
        if self.value() == "disagreed":
            return queryset.filter(disagreed=True)
        return queryset


class CreatedFilter(admin.DateFieldListFilter):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = _("created")


class SessionChangeList(ChangeList):
    def get_queryset(self, request, exclude_parameters=None):
        return session_rows(
            queryset=super().get_queryset(request, exclude_parameters).defer(*LIST_DEFERRED_FIELDS)
        )


REVIEW_FORM_ID = "review-form"


class ReviewForm(forms.Form):
    # The review UI sits inside the admin's own <form>; `form=` ties the fields to a separate
    # <form id="review-form"> rendered after it (forms cannot nest).
    opinion = forms.ChoiceField(
        label=_("Opinion"),
        choices=SessionReview.Opinion.choices,
        widget=forms.RadioSelect(attrs={"form": REVIEW_FORM_ID}),
    )
    expected_verdict = forms.ChoiceField(
        label=_("Expected verdict (when disagreeing)"),
        choices=(("", "—"), *VERDICT_CHOICES),
        required=False,
        widget=forms.Select(attrs={"form": REVIEW_FORM_ID}),
    )
    note = forms.CharField(
        label=_("Note"),
        widget=forms.Textarea(attrs={"rows": 3, "form": REVIEW_FORM_ID}),
        required=False,
        max_length=4000,
    )


def labelled(field_name: str, label, *, boolean: bool = False):
    """A read-only column for a model field under a translated heading (the models carry no verbose names)."""

    @admin.display(description=label, boolean=boolean)
    def column(obj):
        return getattr(obj, field_name)

    column.__name__ = field_name
    return column


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class AgentStepInline(ReadOnlyInline):
    model = AgentStep
    fields = (
        labelled("round", _("round")),
        "agent_display",
        "status_display",
        labelled("thought", _("thought")),
        labelled("latency_ms", _("latency (ms)")),
        "tokens",
        labelled("llm_calls", _("LLM calls")),
        labelled("prompt_version", _("prompt version")),
    )
    readonly_fields = fields

    @admin.display(description=_("stage"))
    def agent_display(self, step: AgentStep) -> str:
        return step.get_agent_display()

    @admin.display(description=_("status"))
    def status_display(self, step: AgentStep) -> str:
        return step.get_status_display()

    @admin.display(description=_("tokens (prompt / completion)"))
    def tokens(self, step: AgentStep) -> str:
        return f"{step.prompt_tokens} / {step.completion_tokens}"


class ToolInvocationInline(ReadOnlyInline):
    model = ToolInvocation
    fields = (
        "invocation_id",
        labelled("round", _("round")),
        labelled("tool_name", _("tool")),
        "source_shown",
        "arguments",
        labelled("success", _("succeeded"), boolean=True),
        "evidence",
        "refs",
        "receipt_shown",
        labelled("latency_ms", _("latency (ms)")),
    )
    readonly_fields = fields

    @admin.display(description=_("invocation id"))
    def invocation_id(self, invocation: ToolInvocation) -> str:
        return f"#{invocation.pk}"

    @admin.display(description=_("source"))
    def source_shown(self, invocation: ToolInvocation) -> str:
        if invocation.is_demo:
            return f"{DEMO_LABEL} ({DEMO})"
        return " ".join(part for part in (invocation.source, invocation.source_location) if part) or "—"

    @admin.display(description=_("arguments"))
    def arguments(self, invocation: ToolInvocation) -> str:
        return ", ".join(f"{key}={value}" for key, value in invocation.input.items()) or "—"

    @admin.display(description=_("evidence status"))
    def evidence(self, invocation: ToolInvocation) -> str:
        return code_text(invocation.evidence_status) or invocation.error or "—"

    @admin.display(description="证据回执")
    def receipt_shown(self, invocation: ToolInvocation) -> str:
        return render_to_string("diagnosis/_receipt.html", {"receipt": invocation.receipt_record})

    def get_queryset(self, request):
        # The trace link's id in the same query: no session row (with its JSON) loaded per call.
        return super().get_queryset(request).annotate(trace_session_id=F("session__session_id"))

    @admin.display(description=_("evidence refs"))
    def refs(self, invocation: ToolInvocation) -> str:
        """The first refs, each cut for display: a call may return thousands of series, a label value
        half a megabyte. The trace JSON one click away holds them all, whole."""
        refs = invocation.evidence_refs
        if not refs:
            return "—"
        texts = [str(ref.get("text") or "") for ref in refs[:AUDIT_REFS_SHOWN]]
        lines = format_html_join(
            "\n",
            "{}: {}",
            (
                (ref.get("raw_path"), Truncator(text).chars(AUDIT_TEXT_CHARS))
                for ref, text in zip(refs[:AUDIT_REFS_SHOWN], texts, strict=True)
            ),
        )
        more = len(refs) - len(texts)
        if not more and all(len(text) <= AUDIT_TEXT_CHARS for text in texts):
            return lines
        link = trace_url(invocation.trace_session_id)
        if more:
            return format_html('{}\n另有 {} 条，完整记录见 <a href="{}">trace JSON</a>', lines, more, link)
        return format_html('{}\n全文见 <a href="{}">trace JSON</a>', lines, link)


class AlertSessionInline(ReadOnlyInline):
    """An AIOps analysis's per-alert sessions, each linking to its own audit page."""

    model = DiagnosisSession
    fk_name = "parent"
    verbose_name = _("alert diagnosis")
    verbose_name_plural = _("per-alert diagnoses")
    show_change_link = True
    ordering = ("id",)
    fields = ("alert", "status_display", "output_type_display", "verdict_display", "groundedness")
    readonly_fields = fields

    @admin.display(description=_("alert"))
    def alert(self, session: DiagnosisSession) -> str:
        alert = (session.alert_scope.get("alerts") or [{}])[0]
        return " · ".join(part for part in (alert.get("alert_name"), alert.get("service")) if part) or "—"

    @admin.display(description=_("status"))
    def status_display(self, session: DiagnosisSession) -> str:
        return session.get_status_display()

    @admin.display(description=_("output type"))
    def output_type_display(self, session: DiagnosisSession) -> str:
        return session.get_output_type_display() or "—"

    @admin.display(description=_("verdict"))
    def verdict_display(self, session: DiagnosisSession) -> str:
        return code_text(session.verdict) or "—"

    @admin.display(description=_("groundedness"))
    def groundedness(self, session: DiagnosisSession) -> str:
        return "—" if session.groundedness_score is None else f"{session.groundedness_score:.2f}"


@admin.register(DiagnosisSession)
class DiagnosisSessionAdmin(admin.ModelAdmin):
    change_form_template = "admin/diagnosis/diagnosissession/change_form.html"
    list_display = (
        "session",
        "question",
        "status_display",
        "output_type_display",
        "verdict_badge",
        "groundedness",
        "severity",
        "feedback_display",
        "reviewed",
        "created",
    )
    # One link a row: each link carries the list's filters back (a URL resolve each), 50 rows a page.
    list_display_links = ("session",)
    list_filter = (
        NeedsReviewFilter,
        StatusFilter,
        OutputTypeFilter,
        VerdictFilter,
        GatekeeperSeverityFilter,
        FeedbackFilter,
        KindFilter,
        EngineFilter,
        ("created_at", CreatedFilter),
    )
    search_fields = ("session_id", "query")
    search_help_text = _("Search by session id (or its beginning) or words in the question.")
    ordering = ("-created_at", "-id")
    list_per_page = 50
    show_full_result_count = False
    # Facet counts are one COUNT per filter option: far too many over 100,000 sessions.
    show_facets = admin.ShowFacets.NEVER
    # The change page is the audit layout of its own template; the form itself shows nothing.
    fields = ("query",)
    readonly_fields = ("query",)
    inlines = (AgentStepInline, ToolInvocationInline)
    actions = ("promote_to_case_library", "export_regression_cases")

    class Media:
        css = {"all": ("diagnosis/admin.css",)}
        js = ("diagnosis/audit.js",)

    def get_queryset(self, request):
        return session_review_annotated(queryset=super().get_queryset(request))

    def get_changelist(self, request, **kwargs):
        return SessionChangeList

    def action_checkbox(self, obj):
        # The same markup as Django's, without rendering a widget template per row (a fifth of the page).
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            obj.pk,
            # Named as `DiagnosisSession.__str__` names it, from the start of the query the row holds.
            format_html(
                _("Select this object for an action - {}"), f"{obj.session_id}: {obj.query_head[:40]}"
            ),
        )

    def get_paginator(self, request, queryset, per_page, orphans=0, allow_empty_first_page=True):
        return EstimatedCountPaginator(queryset, per_page, orphans, allow_empty_first_page)

    def get_search_results(self, request, queryset, search_term):
        """An exact session id finds that session alone (one unique-index probe); otherwise sessions
        whose id starts with the term or whose question contains it (indexed on PostgreSQL)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        exact = queryset.filter(session_id=term)
        if exact.exists():
            return exact, False
        return queryset.filter(Q(session_id__startswith=term) | Q(query__icontains=term)), False

    def get_inlines(self, request, obj):
        if obj is not None and obj.kind == DiagnosisSession.Kind.AIOPS and obj.parent_id is None:
            return (AlertSessionInline, *self.inlines)
        return self.inlines

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # Sessions are the audit record: nobody deletes one here, superusers included (this also
        # removes the "delete selected" action).
        return False

    def has_review_permission(self, request) -> bool:
        return request.user.has_perm(REVIEW_PERMISSION)

    def has_promote_permission(self, request) -> bool:
        return request.user.has_perm(PROMOTE_PERMISSION)

    @admin.display(description=_("session id"), ordering="session_id")
    def session(self, session: DiagnosisSession) -> str:
        return format_html(
            '<span title="{}">{}</span>', session.session_id, Truncator(session.session_id).chars(14)
        )

    @admin.display(description=_("question"))
    def question(self, session: DiagnosisSession) -> str:
        # One line in the list (admin.css cuts it with an ellipsis); the question on hover, as much of
        # it as a row shows.
        shown = row_query(session)
        return format_html('<span title="{}">{}</span>', shown, Truncator(shown).chars(ROW_QUESTION_CHARS))

    @admin.display(description=_("status"), ordering="status")
    def status_display(self, session: DiagnosisSession) -> str:
        return session.get_status_display()

    @admin.display(description=_("output type"), ordering="output_type")
    def output_type_display(self, session: DiagnosisSession) -> str:
        return session.get_output_type_display() or "—"

    @admin.display(description=_("verdict"), ordering="verdict")
    def verdict_badge(self, session: DiagnosisSession) -> str:
        if not session.verdict:
            return "—"
        return format_html(
            '<span class="verdict-badge verdict-{}" title="{}">{}</span>',
            session.verdict,
            session.verdict,
            code_text(session.verdict),
        )

    @admin.display(description=_("groundedness"), ordering="groundedness_score")
    def groundedness(self, session: DiagnosisSession) -> str:
        return "—" if session.groundedness_score is None else f"{session.groundedness_score:.2f}"

    @admin.display(description=_("gatekeeper"), ordering="gatekeeper_severity")
    def severity(self, session: DiagnosisSession) -> str:
        return code_text(session.gatekeeper_severity) or "—"

    @admin.display(description=_("feedback"), ordering="feedback")
    def feedback_display(self, session: DiagnosisSession) -> str:
        return session.get_feedback_display() or "—"

    @admin.display(description=_("reviewed"), boolean=True)
    def reviewed(self, session: DiagnosisSession) -> bool:
        return session.reviewed

    @admin.display(
        description=format_lazy("{}（{}）", _("created"), settings.TIME_ZONE), ordering="created_at"
    )
    def created(self, session: DiagnosisSession) -> str:
        return local_time(session.created_at)

    @admin.action(description=_("Promote to the case library"), permissions=["promote"])
    def promote_to_case_library(self, request: HttpRequest, queryset) -> None:
        created = 0
        for session in queryset:
            try:
                _case, was_created = case_create_from_session(
                    session=session,
                    created_by=request.user.get_username(),
                    source_type=CaseLibrary.SourceType.MANUAL,
                )
            except ValidationError as error:
                self.message_user(
                    request, f"{session.session_id}: {' '.join(error.messages)}", messages.WARNING
                )
                continue
            created += was_created
        self.message_user(request, _("%(count)d case(s) created.") % {"count": created}, messages.SUCCESS)

    @admin.action(description="导出为回归用例")
    def export_regression_cases(self, request: HttpRequest, queryset) -> HttpResponse | None:
        try:
            export = cases_export_file(sessions=queryset.order_by("created_at", "id"))
        except ValidationError as error:
            self.message_user(request, " ".join(error.messages), messages.WARNING)
            return None
        response = HttpResponse(export.content, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        session = self.get_object(request, unquote(object_id))
        if session is not None:
            extra_context = {
                **(extra_context or {}),
                "audit": audit_view(audit=session_audit(session=session)),
                "answer": answer_review_html(stored=session.answer_record, markdown=session.answer),
                "review_form": ReviewForm(),
                "can_review": self.has_review_permission(request),
                "can_promote": self.has_promote_permission(request),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self):
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/review/",
                self.admin_site.admin_view(self.review_view),
                name="{}_{}_review".format(*info),
            ),
            path(
                "<path:object_id>/promote/",
                self.admin_site.admin_view(self.promote_view),
                name="{}_{}_promote".format(*info),
            ),
            *super().get_urls(),
        ]

    def _session_or_404(self, request: HttpRequest, object_id: str) -> DiagnosisSession:
        session = self.get_object(request, unquote(object_id))
        if session is None:
            raise Http404
        return session

    def _change_url(self, session: DiagnosisSession) -> str:
        return reverse("admin:diagnosis_diagnosissession_change", args=[session.pk])

    def review_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_review_permission(request):
            raise PermissionDenied
        session = self._session_or_404(request, object_id)
        form = ReviewForm(request.POST)
        try:
            if not form.is_valid():
                raise ValidationError([message for errors in form.errors.values() for message in errors])
            review_record(session=session, reviewer=request.user, **form.cleaned_data)
        except ValidationError as error:
            self.message_user(request, " ".join(error.messages), messages.ERROR)
        else:
            self.message_user(request, _("Review recorded."), messages.SUCCESS)
        return HttpResponseRedirect(self._change_url(session))

    def promote_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_promote_permission(request):
            raise PermissionDenied
        session = self._session_or_404(request, object_id)
        try:
            case, created = case_create_from_session(
                session=session,
                created_by=request.user.get_username(),
                source_type=CaseLibrary.SourceType.MANUAL,
            )
        except ValidationError as error:
            self.message_user(request, " ".join(error.messages), messages.ERROR)
            return HttpResponseRedirect(self._change_url(session))
        message = _("Case created.") if created else _("This session already has a case.")
        self.message_user(request, message, messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:caselib_caselibrary_change", args=[case.pk]))
