"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.logs.record import LogLine
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
)
