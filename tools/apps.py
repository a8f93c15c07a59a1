from importlib import import_module

from django.apps import AppConfig

from tools.evidence.registry import KINDS
from tools.evidence.tool import SOURCES
from tools.sources import settings_needed, source_for


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "证据工具"

    def ready(self) -> None:
        SOURCES.source_for, SOURCES.settings_needed = source_for, settings_needed
        # One tool per kind (its registry row names it); importing it registers the tool.
        for kind in KINDS:
            import_module(kind.tool_module)
        import_module(f"{self.name}.checks")
