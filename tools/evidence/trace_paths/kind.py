"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.trace_paths.record import TracePathsRecord
from tools.evidence.trace_paths.source import TracePathsSource

TRACE_PATHS = EvidenceKind(
    package="trace_paths",
    tool="query_trace_paths",
    label="调用链路径查询",
    noun="调用链步骤",
    collection_key="steps",
    record=TracePathsRecord,
    source=TracePathsSource,
    unconfigured="未配置调用链数据源",
)
