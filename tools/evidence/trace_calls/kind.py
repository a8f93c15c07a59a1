"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_calls.source import TraceCallsSource

TRACE_CALLS = EvidenceKind(
    package="trace_calls",
    tool="query_trace_calls",
    label="调用链查询",
    noun="操作的调用",
    collection_key="operations",
    record=TraceCallsRecord,
    source=TraceCallsSource,
    unconfigured="未配置调用链数据源",
)
