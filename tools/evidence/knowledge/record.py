"""A knowledge block (a runbook section or a past case); guidance, never a current-incident fact."""

from __future__ import annotations

from typing import Any

from tools.evidence.record import EvidenceRecord


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

    def ref_text(self) -> str:
        return f"{self.title}（{self.source_document}）: {self.content}"
