"""`search_metrics`: which metrics the metrics source holds for some words (a helper, never evidence).

The llm executor asks it what a question's words are in the stack's own names before it writes a
PromQL query; each hit says the metric's name, TYPE, HELP, unit and series names.
"""

from __future__ import annotations

from pydantic import Field

from tools.configured_vocabulary import current_vocabulary
from tools.evidence.metric_catalog.kind import CATALOG
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import EvidenceTool, ToolArguments, ToolContext, register
from tools.metric_search import metrics_searched

MAX_HITS = 10


class SearchMetricsArguments(ToolArguments):
    query: str = Field(
        title="要找的指标",
        min_length=1,
        max_length=200,
        description="中文或英文的词或指标名的一部分，如 请求数、p99 延迟、连接数、磁盘使用率、evictions",
    )
    limit: int = Field(title="条数", default=5, ge=1, le=MAX_HITS, description="最多返回几条指标")


@register
class SearchMetricsTool(EvidenceTool[MetricCatalogSource]):
    kind = CATALOG
    description = (
        "在指标目录中检索指标：返回指标名、类型（counter/gauge/histogram/summary）、说明、单位和序列名，"
        "以及问题里提到的标签值（如数据库名、handler、job）。返回不是证据；用返回的指标名写 PromQL 再调用 query_promql。"
    )
    arguments_model = SearchMetricsArguments
    source_needed = "指标目录需要 Prometheus 数据源"

    def run(self, arguments: SearchMetricsArguments, context: ToolContext) -> ToolResult:
        metric_catalog = self.source().metric_catalog(now=context.now)
        found = metrics_searched(
            arguments.query, metric_catalog=metric_catalog, vocabulary=current_vocabulary()
        )
        hits = found.hits[: arguments.limit]
        output: dict = {
            "success": True,
            "metrics": [hit.entry.described() for hit in hits],
            "message": f"找到 {len(hits)} 个指标" if hits else "指标目录中没有与之对应的指标",
        }
        if found.reading.subjects:
            output["label_values"] = [
                {"label": label, "value": value} for label, value in found.reading.subjects
            ]
        if found.reading.unmatched:
            output["unmatched"] = list(found.reading.unmatched)
        return self.typed(output, arguments)
