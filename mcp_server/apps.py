from django.apps import AppConfig


class McpServerConfig(AppConfig):
    """The verified answers and the evidence tools for MCP clients (an engineer's AI assistant or
    editor): `manage.py mcp` on stdio, `/mcp` over Streamable HTTP."""

    name = "mcp_server"
    verbose_name = "MCP 服务"
