"""`query_alerts`: the alerts currently known for a service or alert name."""

from __future__ import annotations

from pydantic import Field

from tools.evidence.alerts.kind import ALERTS
from tools.evidence.alerts.source import AlertSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register


class QueryAlertsArguments(ToolArguments):
    service: str | None = Field(
        default=None,
        title="服务",
        max_length=MAX_TEXT_CHARS,
        description="服务名（告警或日志的服务标签值）；不填则查询全部服务",
    )
    alert_name: str | None = Field(
        default=None,
        title="告警",
        max_length=MAX_TEXT_CHARS,
        description="告警名（告警列表或告警规则中的名称）；不填则不按告警名过滤",
    )


@register
class QueryAlertsTool(EvidenceTool[AlertSource]):
    kind = ALERTS
    description = "查询当前告警（告警名、服务、状态、描述、开始时间、持续时长），可按服务或告警名过滤。"
    arguments_model = QueryAlertsArguments

    def run(self, arguments: QueryAlertsArguments, context: ToolContext) -> ToolResult:
        alerts = self.source().query_alerts(
            service=arguments.service, alert_name=arguments.alert_name, now=context.now
        )
        message = f"找到 {len(alerts)} 条告警" if alerts else "未找到匹配的告警"
        return self.typed(
            {"success": True, "alerts": alerts, "total": len(alerts), "message": message}, arguments
        )
