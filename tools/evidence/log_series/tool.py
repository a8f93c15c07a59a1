"""`query_logql`: a LogQL metric query (`sum by (service) (count_over_time({…} |~ "error" [1m]))`)
over the last minutes, one point a minute. Each series is one evidence ref naming the series and its
numbers, as a PromQL range series is (`SeriesRecord`)."""

from __future__ import annotations

from pydantic import Field

from tools.evidence.log_series.kind import LOG_SERIES
from tools.evidence.log_series.source import LogSeriesSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register

# The longest window: a day of minutes, as Loki's default `max_query_length` allows far more.
MAX_MINUTES = 24 * 60


class QueryLogqlArguments(ToolArguments):
    query: str = Field(
        title="LogQL",
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description='LogQL 指标查询，如 sum by (service) (count_over_time({service=~".+"} |~ "error" [1m]))',
    )
    minutes: int = Field(
        title="最近分钟数", ge=1, le=MAX_MINUTES, description="查询最近这么多分钟，每分钟一个点"
    )


@register
class QueryLogqlTool(EvidenceTool[LogSeriesSource]):
    kind = LOG_SERIES
    description = "执行 LogQL 指标查询（最近 N 分钟，每分钟一个点），返回每条序列的标签与采样值。"
    arguments_model = QueryLogqlArguments

    def run(self, arguments: QueryLogqlArguments, context: ToolContext) -> ToolResult:
        answer = self.source().query_logql(query=arguments.query, minutes=arguments.minutes, now=context.now)
        series = answer["series"]
        message = f"返回 {len(series)} 条时间序列" if series else "查询结果为空"
        return self.typed(
            {"success": True, "result_type": answer["result_type"], "series": series, "message": message},
            arguments,
        )
