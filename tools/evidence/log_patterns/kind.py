"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words
for it. Its records are series (`SeriesRecord`), one per pattern: the pattern's text is a label, its
count each minute the values, as a LogQL metric query's."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.log_patterns.source import LogPatternsSource
from tools.evidence.series.record import SeriesRecord

LOG_PATTERNS = EvidenceKind(
    package="log_patterns",
    tool="query_log_patterns",
    label="日志模式查询",
    noun="日志模式序列",
    collection_key="series",
    counted_as="series",
    record=SeriesRecord,
    source=LogPatternsSource,
    unconfigured="未配置日志源",
)
