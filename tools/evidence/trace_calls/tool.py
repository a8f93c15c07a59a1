"""`query_trace_calls`: which calls each operation's spans made, per minute, over a bounded sample of
the traces of the last minutes. Each (service, operation) is one evidence ref naming the calls its
spans made; its counts are what a share of its spans that made a call is computed from."""

from __future__ import annotations

from pydantic import Field, model_validator

from tools.evidence.result import ToolResult
from tools.evidence.tool import EvidenceTool, ToolArguments, ToolContext, register
from tools.evidence.trace_calls.kind import TRACE_CALLS
from tools.evidence.trace_calls.source import TraceCallsSource

# The longest window: a day of minutes (a trace store keeps days; the sample is bounded either way).
MAX_MINUTES = 24 * 60


class QueryTraceCallsArguments(ToolArguments):
    minutes: int = Field(
        title="最近分钟数", ge=1, le=MAX_MINUTES, description="读取最近这么多分钟的调用链样本，按分钟计数"
    )
    incident_minutes: int = Field(
        title="故障分钟数",
        ge=1,
        le=MAX_MINUTES,
        description="其中最近这么多分钟是故障期，之前是基线：两段各取样",
    )

    @model_validator(mode="after")
    def incident_within_window(self) -> QueryTraceCallsArguments:
        if self.incident_minutes > self.minutes:
            raise ValueError("incident_minutes 不能超过 minutes")
        return self


@register
class QueryTraceCallsTool(EvidenceTool[TraceCallsSource]):
    kind = TRACE_CALLS
    description = (
        "读取最近 N 分钟的调用链样本（每个服务在基线与故障期各取一份，有上限），"
        "返回每个服务的每个操作每分钟的 span 数及其发起的调用组合。"
    )
    arguments_model = QueryTraceCallsArguments

    def run(self, arguments: QueryTraceCallsArguments, context: ToolContext) -> ToolResult:
        answer = self.source().trace_calls(
            minutes=arguments.minutes, incident_minutes=arguments.incident_minutes, now=context.now
        )
        operations = answer["operations"]
        message = (
            f"读取 {answer['traces_read']} 条调用链（共找到 {answer['traces_found']} 条），"
            f"返回 {len(operations)} 个操作"
            if operations
            else "查询结果为空"
        )
        return self.typed(
            {
                "success": True,
                "operations": operations,
                "traces_read": answer["traces_read"],
                "traces_found": answer["traces_found"],
                "message": message,
            },
            arguments,
        )
