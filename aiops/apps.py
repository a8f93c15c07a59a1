from django.apps import AppConfig


class AiopsConfig(AppConfig):
    """Alert analysis (seed 004 §6): per-alert sessions through the diagnosis pipeline, and the report.

    No models of its own: analyses are diagnosis sessions of kind `aiops` with their alert scope."""

    name = "aiops"
    verbose_name = "告警分析"
