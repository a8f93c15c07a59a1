"""`query_logs`: log lines matching a query, by service and topic keywords with synonyms;
`count_logs`: lines counted over the window by what their format says (slow lines with the slowest,
access lines by path or status, error lines by class)."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from django.conf import settings
from pydantic import Field

from tools.configured_vocabulary import current_vocabulary
from tools.evidence.logs.kind import LOG_COUNTS, LOGS
from tools.evidence.logs.source import LogSource, logs_counted
from tools.evidence.result import ToolResult
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register
from tools.logcounts import MEASURES, CountRequest

LogTopic = Literal["system-metrics", "application-logs", "database-slow-query", "system-events"]
# The longest window a count may ask for: a week, as a PromQL range.
MAX_COUNT_MINUTES = 7 * 24 * 60


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


class CountLogsArguments(ToolArguments):
    measure: Literal[MEASURES] = Field(
        title="统计",
        description="slow：耗时超过阈值的日志（PostgreSQL duration、访问日志请求耗时、took N seconds）的条数与最慢一条；"
        "path：访问日志按请求路径计数；status：访问日志按 HTTP 状态码计数；class：错误日志按类别"
        "（SQLSTATE 类、errno、异常类）计数",
    )
    service: str | None = Field(
        default=None, title="服务", max_length=MAX_TEXT_CHARS, description="只统计该服务的日志（服务标签值）"
    )
    status: str | None = Field(
        default=None,
        title="状态码",
        max_length=3,
        pattern=r"^[1-5](?:[0-9]{2}|[xX]{2})$",
        description="path / status 统计只计该状态码（如 404）或该类（如 5xx）的访问日志",
    )
    slower_than_ms: float | None = Field(
        default=None,
        title="耗时阈值（毫秒）",
        gt=0,
        le=86_400_000,
        description="slow 统计的阈值，默认词表的慢阈值",
    )
    minutes: int | None = Field(
        default=None, title="分钟", ge=1, le=MAX_COUNT_MINUTES, description="统计最近多少分钟，默认日志窗口"
    )


@register
class CountLogsTool(EvidenceTool[LogSource]):
    kind = LOG_COUNTS
    description = (
        "按日志格式解析出的字段统计整个时间窗内的日志条数（Loki 用 LogQL 指标查询）："
        "慢（耗时超过阈值，含最慢一条）、按路径或状态码（访问日志）、按错误类别。"
    )
    arguments_model = CountLogsArguments

    def run(self, arguments: CountLogsArguments, context: ToolContext) -> ToolResult:
        window = settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"]
        threshold = arguments.slower_than_ms or current_vocabulary().slow_threshold_ms
        request = CountRequest(
            measure=arguments.measure,
            minutes=min(arguments.minutes or window, window),
            service=arguments.service or "",
            status=(arguments.status or "").lower(),
            slower_than_ms=Decimal(str(threshold)),
        )
        counts = logs_counted(self.source(), request=request, now=context.now)
        total = counts.records[0]["count"] if counts.records else 0
        message = (
            f"最近 {request.minutes} 分钟统计到 {total} 条"
            if total
            else f"最近 {request.minutes} 分钟没有可统计的日志"
        )
        if request.minutes < (arguments.minutes or 0):
            message += f"（日志只能看到最近 {window} 分钟）"
        output = {"success": True, "counts": counts.records, "total": total, "queries": list(counts.queries)}
        return self.typed(output | {"message": message}, arguments)
