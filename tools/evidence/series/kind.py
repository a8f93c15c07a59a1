"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.series.record import SeriesRecord
from tools.evidence.series.source import SeriesSource

SERIES = EvidenceKind(
    package="series",
    tool="query_promql",
    label="指标查询",
    noun="指标",
    collection_key="series",
    counted_as="series",
    record=SeriesRecord,
    source=SeriesSource,
    unconfigured="未配置 Prometheus 数据源",
)
