"""`query_log_patterns`: the patterns of the lines a stream selector picks (`{service="<name>"}`)
over the last minutes, each counted per minute. Each pattern is one evidence ref naming the pattern
and its numbers, as a series is (`SeriesRecord`)."""

from __future__ import annotations

from pydantic import Field

from tools.evidence.log_patterns.kind import LOG_PATTERNS
from tools.evidence.log_patterns.source import LogPatternsSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register

# The longest window: a day of minutes (Loki keeps patterns for hours; a day bounds the points).
MAX_MINUTES = 24 * 60


class QueryLogPatternsArguments(ToolArguments):
    query: str = Field(
        title="日志流选择器",
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description='LogQL 日志流选择器，如 {service="<服务名>"}',
    )
    minutes: int = Field(
        title="最近分钟数", ge=1, le=MAX_MINUTES, description="查询最近这么多分钟，每分钟一个点"
    )


@register
class QueryLogPatternsTool(EvidenceTool[LogPatternsSource]):
    kind = LOG_PATTERNS
    description = "列出日志流中的日志模式（最近 N 分钟，每分钟一个点），返回每个模式的文本与每分钟条数。"
    arguments_model = QueryLogPatternsArguments

    def run(self, arguments: QueryLogPatternsArguments, context: ToolContext) -> ToolResult:
        answer = self.source().log_patterns(query=arguments.query, minutes=arguments.minutes, now=context.now)
        series = answer["series"]
        message = f"返回 {len(series)} 个日志模式" if series else "查询结果为空"
        return self.typed(
            {"success": True, "result_type": answer["result_type"], "series": series, "message": message},
            arguments,
        )
