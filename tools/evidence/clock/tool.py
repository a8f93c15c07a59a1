"""`get_current_datetime`: a helper, never evidence."""

from __future__ import annotations

from django.conf import settings

from tools.clock import local_text
from tools.evidence.clock.kind import CLOCK
from tools.evidence.result import ToolResult
from tools.evidence.tool import EvidenceTool, ToolArguments, ToolContext, register


class NoArguments(ToolArguments):
    pass


@register
class GetCurrentDatetimeTool(EvidenceTool):
    kind = CLOCK
    description = "返回当前时间（与日志时间戳同一时区、同一格式），用于换算“最近 N 分钟”。"
    arguments_model = NoArguments

    def run(self, arguments: NoArguments, context: ToolContext) -> ToolResult:
        return self.typed({"now": local_text(context.now), "timezone": settings.TIME_ZONE}, arguments)
