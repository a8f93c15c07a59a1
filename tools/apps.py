from importlib import import_module

from django.apps import AppConfig

# One module per tool; importing it registers the tool.
TOOL_MODULES = (
    "query_alerts",
    "query_promql",
    "query_targets",
    "query_logs",
    "lookup_knowledge",
    "get_current_datetime",
)


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "证据工具"

    def ready(self) -> None:
        for module in TOOL_MODULES:
            import_module(f"{self.name}.{module}")
        import_module(f"{self.name}.checks")
