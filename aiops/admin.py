"""Reviewers' admin of alert episodes and report deliveries (per channel, each attempt visible)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from aiops.models import AlertEpisode, DeliveryAttempt, ReportDelivery


def _report_link(report) -> str:
    if report is None:
        return "—"
    url = reverse("admin:diagnosis_diagnosissession_change", args=[report.pk])
    return format_html('<a href="{}">{}</a>', url, report.session_id)


@admin.register(AlertEpisode)
class AlertEpisodeAdmin(admin.ModelAdmin):
    list_display = ("alert_name", "fingerprint", "starts_at", "state", "ends_at", "report_link")
    list_filter = ("state",)
    search_fields = ("alert_name", "fingerprint")
    readonly_fields = [field.name for field in AlertEpisode._meta.fields] + ["report_link"]
    list_select_related = ("report",)

    @admin.display(description="报告")
    def report_link(self, episode: AlertEpisode) -> str:
        return _report_link(episode.report)

    def has_add_permission(self, request) -> bool:
        return False


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    readonly_fields = ("number", "attempted_at", "succeeded", "http_status", "latency_ms", "error")
    fields = readonly_fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ReportDelivery)
class ReportDeliveryAdmin(admin.ModelAdmin):
    list_display = (
        "created_at",
        "event",
        "channel",
        "report_link",
        "url",
        "state",
        "attempt_count",
        "next_attempt_at",
    )
    list_filter = ("state", "channel", "event")
    readonly_fields = [field.name for field in ReportDelivery._meta.fields] + ["report_link"]
    inlines = [DeliveryAttemptInline]
    list_select_related = ("report",)

    @admin.display(description="报告")
    def report_link(self, delivery: ReportDelivery) -> str:
        return _report_link(delivery.report)

    def has_add_permission(self, request) -> bool:
        return False
