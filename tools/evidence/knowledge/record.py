"""A knowledge block (a runbook section or a past case); guidance, never a current-incident fact."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import bounded


class RunbookSection(EvidenceRecord):
    """A knowledge block (a runbook's section or a past case) as `lookup_knowledge` ranked it."""

    block_id: str = ""
    source_document: str = ""
    title: str = ""
    section: str = ""
    content: str = ""
    retrieval_layer: str = ""
    relevance: str = ""
    score: Any = None
    matched_terms: list[str] = []
    # Returned earlier in the session: not new evidence, so no ref cites it.
    deduped: bool = False

    def identity(self) -> str:
        return self.block_id

    def ref_text(self) -> str:
        return f"{self.title}（{self.source_document}）: {self.content}"

    @classmethod
    def summary(cls, records: Sequence[RunbookSection], *, budget: int) -> str:
        fresh = [block for block in records if not block.deduped]
        lines = list(
            dict.fromkeys(
                f"[{block.retrieval_layer}/{block.relevance}] {block.title}（{block.source_document}）"
                for block in fresh
            )
        )
        deduped = len(records) - len(fresh)
        prefix = "knowledge_guidance（排查参考，非当前事实）: "
        if deduped:
            prefix += f"另有 {deduped} 个知识块为本会话重复返回（无新证据）; "
        return bounded(prefix, lines, budget, "个知识块")
