"""`query_logs`: log lines matching a query, by service and topic keywords with synonyms."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tools.evidence.logs.kind import LOGS
from tools.evidence.logs.source import LogSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register

LogTopic = Literal["system-metrics", "application-logs", "database-slow-query", "system-events"]


class QueryLogsArguments(ToolArguments):
    query: str = Field(
        title="关键词",
        min_length=1,
        max_length=500,
        description="检索内容，中英文关键词均可，如 “连接池耗尽”、“Full GC”、“慢请求”",
    )
    service: str | None = Field(
        default=None, title="服务", max_length=MAX_TEXT_CHARS, description="只看该服务的日志（服务标签值）"
    )
    topic: LogTopic | None = Field(
        default=None,
        title="日志类别",
        description="日志类别：system-metrics 资源指标 / application-logs 应用日志 / "
        "database-slow-query 数据库慢查询 / system-events 系统事件",
    )
    limit: int = Field(default=20, title="条数", ge=1, le=100, description="最多返回条数")


@register
class QueryLogsTool(EvidenceTool[LogSource]):
    kind = LOGS
    description = "按关键词检索日志（支持同义词，中英文），可按服务、日志类别过滤，最新的在前。"
    arguments_model = QueryLogsArguments

    def run(self, arguments: QueryLogsArguments, context: ToolContext) -> ToolResult:
        logs = self.source().query_logs(
            query=arguments.query, service=arguments.service, topic=arguments.topic, now=context.now
        )
        shown = logs[: arguments.limit]
        message = f"找到 {len(logs)} 条匹配日志，返回 {len(shown)} 条" if logs else "未找到匹配的日志"
        return self.typed({"success": True, "logs": shown, "total": len(logs), "message": message}, arguments)
