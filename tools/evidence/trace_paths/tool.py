"""`query_trace_paths`: which step came right after each step of a bounded sample of the traces of the
last minutes, per window. Each (service, step) is one evidence ref naming the steps after it; its
counts are what a share of its traces that went on to a step is computed from."""

from __future__ import annotations

from tools.evidence.result import ToolResult
from tools.evidence.tool import EvidenceTool, ToolContext, register
from tools.evidence.trace_calls.tool import QueryTraceCallsArguments
from tools.evidence.trace_paths.kind import TRACE_PATHS
from tools.evidence.trace_paths.source import TracePathsSource


@register
class QueryTracePathsTool(EvidenceTool[TracePathsSource]):
    kind = TRACE_PATHS
    description = (
        "读取最近 N 分钟的调用链样本（基线与故障期各取一份，有上限），"
        "返回每个服务的每个步骤（span 开始、span 中写的日志行）之后紧接的步骤及其调用链数。"
    )
    # The same window as the traces' calls: minutes read, the last of them the incident.
    arguments_model = QueryTraceCallsArguments

    def run(self, arguments: QueryTraceCallsArguments, context: ToolContext) -> ToolResult:
        answer = self.source().trace_paths(
            minutes=arguments.minutes, incident_minutes=arguments.incident_minutes, now=context.now
        )
        steps = answer["steps"]
        message = (
            f"读取 {answer['traces_read']} 条调用链（共找到 {answer['traces_found']} 条），返回 {len(steps)} 个步骤"
            if steps
            else "查询结果为空"
        )
        return self.typed(
            {
                "success": True,
                "steps": steps,
                "traces_read": answer["traces_read"],
                "traces_found": answer["traces_found"],
                "message": message,
            },
            arguments,
        )
