from importlib import import_module

from django.apps import AppConfig


class AiopsConfig(AppConfig):
    """Alert analysis: per-alert sessions through the diagnosis pipeline,
    the report, Alertmanager's episodes and the deliveries of reports."""

    name = "aiops"
    verbose_name = "告警分析"

    def ready(self) -> None:
        from aiops.report import REPORT_RECORD_TYPE, stored_report_markdown
        from aiops.services import aiops_reports_reaped
        from diagnosis.presenters.answer import record_writer_register
        from diagnosis.signals import sessions_reaped

        sessions_reaped.connect(aiops_reports_reaped, dispatch_uid="aiops.aiops_reports_reaped")
        # The chat page renders an analysis's report from its record.
        record_writer_register(record_type=REPORT_RECORD_TYPE, writer=stored_report_markdown)
        # Registers the system check of the chat channels.
        import_module("aiops.channels.checks")
