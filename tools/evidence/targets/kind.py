"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.targets.record import TargetRecord
from tools.evidence.targets.source import TargetSource

TARGETS = EvidenceKind(
    package="targets",
    tool="query_targets",
    label="抓取目标查询",
    noun="抓取目标",
    collection_key="targets",
    counted_as="targets",
    record=TargetRecord,
    source=TargetSource,
    unconfigured="未配置 Prometheus 数据源",
)
