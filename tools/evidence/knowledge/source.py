"""What a knowledge source answers (runbook files, the demo world, a fixture)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tools.evidence.source import Source
from tools.knowledge_block import KnowledgeBlock


@runtime_checkable
class KnowledgeSource(Source, Protocol):
    """`lookup_knowledge`: every runbook and past-case block it knows; the tool ranks them."""

    def knowledge_blocks(self) -> list[KnowledgeBlock]: ...
