"""`query_promql`: a PromQL query against Prometheus, instant or over the last minutes.

Each series is one evidence ref whose text names the series and its numbers, so an answer can only
quote a number Prometheus returned: `node_load1{instance="web-1:9100",job="node"} 最新值 0.52（13:20:00），
区间最小 0.31，最大 0.88`.
"""

from __future__ import annotations

from datetime import timedelta

import promql_parser
from pydantic import Field

from tools import clock
from tools.evidence.result import ToolResult
from tools.evidence.series.kind import SERIES
from tools.evidence.series.source import SeriesSource
from tools.evidence.tool import MAX_TEXT_CHARS, EvidenceTool, ToolArguments, ToolContext, register
from tools.promql import read_back, unnamed_selector

MAX_MINUTES = 7 * 24 * 60
# How far back a caller's query may read when the server states no time retention: Prometheus's own
# default (`--storage.tsdb.retention.time`).
DEFAULT_RETENTION = timedelta(days=15)
# What a caller's query may not do, said as what to change. A selector without a metric name reads
# every series the server holds; a range past the retention reads back through blocks that hold nothing.
NO_METRIC_NAME = (
    'PromQL 选择器 {selector} 没有指标名：请写出指标名（如 node_load1{{job="node"}}）'
    '或 __name__="指标名"，不要只按标签或用正则匹配指标名'
)
BEYOND_RETENTION = (
    "PromQL 要读到 {reach} 之前的数据，超过 Prometheus 的保留期 {retention}："
    "请缩短区间 [...]、offset、@ 时间或 minutes"
)


class QueryPromqlArguments(ToolArguments):
    query: str = Field(
        title="PromQL",
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description='PromQL 表达式，如 node_load1{job="node"} 或 rate(http_requests_total[5m])',
    )
    minutes: int = Field(
        title="最近分钟数",
        default=0,
        ge=0,
        le=MAX_MINUTES,
        description="0 为即时查询；大于 0 时查询最近这么多分钟的区间",
    )


@register
class QueryPromqlTool(EvidenceTool[SeriesSource]):
    kind = SERIES
    description = "执行 PromQL 查询（即时或最近 N 分钟区间），返回每条时间序列的标签与采样值。"
    arguments_model = QueryPromqlArguments
    source_needed = "PromQL 需要 Prometheus 数据源"

    def run(self, arguments: QueryPromqlArguments, context: ToolContext) -> ToolResult:
        source = self.source()
        # Asked about an earlier time (a claim's own), the query reads back from now through that time too.
        reach = read_back(
            arguments.query, window=timedelta(minutes=arguments.minutes), now=context.now
        ) + max(clock.now() - context.now, timedelta(0))
        # A query the pipeline planned is its own, and a window beyond the retention is answered with
        # the part the server keeps; a caller's query is checked before it reaches the server.
        if context.caller_written and (
            refusal := written_query_refusal(arguments.query, reach=reach, source=source)
        ):
            return self.typed({"success": False, "message": refusal}, arguments)
        answer = source.query_promql(query=arguments.query, minutes=arguments.minutes, now=context.now)
        series = answer["series"]
        message = f"返回 {len(series)} 条时间序列" if series else "查询结果为空"
        output = {"success": True, "result_type": answer["result_type"], "series": series, "message": message}
        if "total_series" in answer:
            # The source bounded its answer as it parsed it: the total is what it saw (tools.bounds).
            output["total_series"] = answer["total_series"]
        if reach > timedelta(0):
            # A window beyond what the server keeps is answered with the window that exists.
            output["retention_minutes"] = source.retention_minutes()
        return self.typed(output, arguments)


def written_query_refusal(query: str, *, reach: timedelta, source: SeriesSource) -> str | None:
    """Why a query a caller wrote is not sent, or None: a selector without a metric name, or samples
    read further back than the source keeps them."""
    selector = unnamed_selector(query)
    if selector is not None:
        return NO_METRIC_NAME.format(selector=selector)
    if reach <= timedelta(0):
        return None
    kept = source.retention_minutes()
    retention = timedelta(minutes=kept) if kept else DEFAULT_RETENTION
    if reach > retention:
        return BEYOND_RETENTION.format(
            reach=promql_parser.display_duration(reach), retention=promql_parser.display_duration(retention)
        )
    return None
