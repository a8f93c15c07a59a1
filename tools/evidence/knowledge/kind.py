"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.knowledge.source import KnowledgeSource

KNOWLEDGE = EvidenceKind(
    package="knowledge",
    tool="lookup_knowledge",
    label="处理手册检索",
    noun="处理手册",
    collection_key="evidence_blocks",
    plannable=True,
    guidance=True,
    counted_as="blocks",
    record=RunbookSection,
    source=KnowledgeSource,
    unconfigured="未配置处理手册库",
)
