"""Its rows in the registry (`tools.evidence.registry.KINDS`): the tools' names and the product's words
for them. One source answers both: the lines (`query_logs`) and the counts of lines (`count_logs`)."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.logs.record import LogCount, LogLine
from tools.evidence.logs.source import LogSource

LOGS = EvidenceKind(
    package="logs",
    tool="query_logs",
    label="日志查询",
    noun="日志",
    collection_key="logs",
    plannable=True,
    counted_as="lines",
    record=LogLine,
    source=LogSource,
    unconfigured="未配置日志源",
)
LOG_COUNTS = EvidenceKind(
    package="logs",
    tool="count_logs",
    label="日志统计",
    noun="日志统计",
    collection_key="counts",
    plannable=True,
    counted_as="counts",
    record=LogCount,
    source=LogSource,
    unconfigured="未配置日志源",
)
