"""A knowledge block: one section of a runbook or one past case, as a knowledge source answers it and
`tools.retrieval` ranks it. Django-free: the knowledge protocol (`tools.evidence.knowledge.source`) names it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnowledgeBlock:
    block_id: str
    source_document: str
    title: str
    content: str
    exact_terms: tuple[str, ...] = ()
    # The section heading ("常见原因", "处置措施"): what kind of question the block answers.
    section: str = ""
