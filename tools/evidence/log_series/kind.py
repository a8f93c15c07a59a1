"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words
for it. Its records are series (`SeriesRecord`), as a PromQL answer's: a LogQL metric query answers
the same matrix."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.log_series.source import LogSeriesSource
from tools.evidence.series.record import SeriesRecord

LOG_SERIES = EvidenceKind(
    package="log_series",
    tool="query_logql",
    label="日志指标查询",
    noun="日志序列",
    collection_key="series",
    counted_as="series",
    record=SeriesRecord,
    source=LogSeriesSource,
    unconfigured="未配置日志源",
)
