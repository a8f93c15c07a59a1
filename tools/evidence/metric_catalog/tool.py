"""`search_metrics`: which metrics the metrics source holds for some words (a helper, never evidence).

The llm executor asks it what a question's words are in the stack's own names before it writes a
PromQL query; each hit says the metric's name, TYPE, HELP, unit and series names, and where Prometheus
answers PromQL the query its type asks for the words (`tools.metric_query`).
"""

from __future__ import annotations

from dataclasses import replace

from pydantic import Field

from tools.configured_vocabulary import current_vocabulary
from tools.evidence.metric_catalog.kind import CATALOG
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.result import ToolResult
from tools.evidence.series.source import SeriesSource
from tools.evidence.tool import SOURCES, EvidenceTool, ToolArguments, ToolContext, register
from tools.metric_catalog import MetricCatalog, MetricEntry
from tools.metric_query import Measure, measure_built
from tools.metric_search import MetricHit, Search, metrics_searched

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
        "问题里提到的标签值（如数据库名、handler、job），有 Prometheus 时还给出按类型写好的 PromQL（counter 的速率、"
        "histogram 的分位数、比率）。返回不是证据；用返回的 promql 或指标名调用 query_promql。"
    )
    arguments_model = SearchMetricsArguments
    source_needed = "指标目录需要 Prometheus 数据源"

    def run(self, arguments: SearchMetricsArguments, context: ToolContext) -> ToolResult:
        metric_catalog = self.source().metric_catalog(now=context.now)
        found = metrics_searched(
            arguments.query, metric_catalog=metric_catalog, vocabulary=current_vocabulary()
        )
        hits = found.hits[: arguments.limit]
        # A query is suggested where PromQL can be sent: the type's computation, before the subjects'
        # matchers (their label values are listed beside it).
        queried = SOURCES.chosen(SeriesSource) is not None
        output: dict = {
            "success": True,
            "metrics": [_described(hit.entry, found, metric_catalog, queried=queried) for hit in hits],
            "message": f"找到 {len(hits)} 个指标" if hits else "指标目录中没有与之对应的指标",
        }
        if found.reading.subjects:
            output["label_values"] = [
                {"label": label, "value": value} for label, value in found.reading.subjects
            ]
        if found.reading.unmatched:
            output["unmatched"] = list(found.reading.unmatched)
        return self.typed(output, arguments)


def _described(entry: MetricEntry, found: Search, metric_catalog: MetricCatalog, *, queried: bool) -> dict:
    """A hit as the model reads it; where PromQL can be sent, with the query its type asks for the
    words (a rate of a counter, a quantile of a histogram), built as the asks build it."""
    described = entry.described()
    if not queried:
        return described
    built = measure_built(
        replace(found.reading, unmatched=(), subjects=(), name_words=()),
        [MetricHit(entry=entry, score=0.0)],
        metric_catalog=metric_catalog,
        carrier=None,
        label_names=None,
        named=entry.name,
    )
    if isinstance(built, Measure):
        described["promql"] = built.query
    return described
