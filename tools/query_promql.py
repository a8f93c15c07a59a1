"""`query_promql`: a PromQL query against Prometheus, instant or over the last minutes.

Each series is one evidence ref whose text names the series and its numbers, so an answer can only
quote a number Prometheus returned: `node_load1{instance="web-1:9100",job="node"} 最新值 0.52（13:20:00），
区间最小 0.31，最大 0.88`.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import Field

from tools.base import EvidenceTool, ToolArguments, ToolContext, register
from tools.clock import local_text
from tools.evidence_kinds import SERIES
from tools.numbers import finite_number, number_text, series_name
from tools.sources.kinds import SeriesSource

MAX_MINUTES = 7 * 24 * 60
# A range selector (`changes(ALERTS_FOR_STATE[7d])`): an instant query that still reads back in time.
RANGE_SELECTOR = re.compile(r"\[\s*\d+[smhdwy]")


class QueryPromqlArguments(ToolArguments):
    query: str = Field(
        title="PromQL",
        min_length=1,
        max_length=2000,
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
    source_kind = SeriesSource
    source_needed = "PromQL 需要 Prometheus 数据源"

    def run(self, arguments: QueryPromqlArguments, context: ToolContext) -> dict[str, Any]:
        source = self.source()
        answer = source.query_promql(query=arguments.query, minutes=arguments.minutes, now=context.now)
        series = answer["series"]
        message = f"返回 {len(series)} 条时间序列" if series else "查询结果为空"
        output = {"success": True, "result_type": answer["result_type"], "series": series, "message": message}
        if arguments.minutes > 0 or RANGE_SELECTOR.search(arguments.query):
            # A window beyond what the server keeps is answered with the window that exists.
            output["retention_minutes"] = source.retention_minutes()
        return output

    def evidence_text(self, record: dict[str, Any]) -> str:
        return f"{series_name(record.get('metric') or {})} {samples_text(record)}"


def _sample(pair: list) -> tuple[str, str]:
    timestamp, value = pair
    return local_text(datetime.fromtimestamp(float(timestamp)).astimezone())[11:], str(value)


def samples_text(record: dict[str, Any]) -> str:
    if "value" in record:
        at, value = _sample(record["value"])
        return f"当前值 {number_text(value)}（{at}）"
    points = [_sample(pair) for pair in record.get("values") or []]
    if not points:
        return "区间内无采样"
    at, latest = points[-1]
    text = f"最新值 {number_text(latest)}（{at}）"
    numbers = [finite_number(value) for _, value in points]
    finite = [number for number in numbers if number is not None]
    if len(finite) > 1:
        text += f"，区间最小 {number_text(str(min(finite)))}，最大 {number_text(str(max(finite)))}"
    return text
