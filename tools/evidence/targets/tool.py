"""`query_targets`: Prometheus's scrape targets and their health (the `health` ask).

Each target is one evidence ref that names it and, when its scrape fails, Prometheus's own error:
`job="node" instance="web-1:9100" health=down lastError: Get "…": connection refused`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tools.evidence.result import ToolResult
from tools.evidence.targets.kind import TARGETS
from tools.evidence.targets.source import TargetSource
from tools.evidence.tool import EvidenceTool, ToolArguments, ToolContext, register
from tools.terms import matches

DOWN = "down"


class QueryTargetsArguments(ToolArguments):
    job: str | None = Field(
        default=None,
        title="抓取任务",
        max_length=200,
        description="Prometheus 抓取任务名（job 标签）；不填则返回所有任务的目标",
    )
    state: Literal["down", "any"] = Field(
        default="any", title="状态", description="down 只返回抓取失败的目标；any 返回全部目标"
    )


@register
class QueryTargetsTool(EvidenceTool[TargetSource]):
    kind = TARGETS
    description = "查询 Prometheus 抓取目标（job、instance）的健康状态（up/down）与最近一次抓取的错误。"
    arguments_model = QueryTargetsArguments
    source_needed = "抓取目标需要 Prometheus 数据源"

    def run(self, arguments: QueryTargetsArguments, context: ToolContext) -> ToolResult:
        targets = [
            target
            for target in self.source().targets()
            if matches(arguments.job, target["job"]) and (arguments.state != DOWN or target["health"] == DOWN)
        ]
        message = f"找到 {len(targets)} 个抓取目标" if targets else "未找到匹配的抓取目标"
        return self.typed(
            {"success": True, "targets": targets, "total": len(targets), "message": message}, arguments
        )
