"""The case library as a knowledge source for `lookup_knowledge` (`DIAGNOSIS["KNOWLEDGE_SOURCES"]`)."""

from __future__ import annotations

from caselib.models import CaseLibrary
from tools.evidence.knowledge.source import KnowledgeSource
from tools.knowledge_block import KnowledgeBlock

# The newest approved cases searched per call; older ones are still in the library, just not in reach.
MAX_CASES = 500


class CaseLibraryKnowledge(KnowledgeSource):
    def knowledge_blocks(self) -> list[KnowledgeBlock]:
        return case_blocks()


def case_blocks() -> list[KnowledgeBlock]:
    """Approved past cases as searchable blocks, marked by a `case:<case_id>` source document.

    A candidate is one user's opinion of their own session: until a reviewer approves it, it is
    nobody else's evidence."""
    cases = CaseLibrary.objects.filter(status=CaseLibrary.Status.APPROVED).order_by("-created_at")[:MAX_CASES]
    return [
        KnowledgeBlock(
            block_id=f"case:{case.case_id}",
            source_document=f"case:{case.case_id}",
            title=f"历史案例：{case.title}",
            content="\n".join(
                f"{label}：{value}"
                for label, value in (
                    ("服务", case.service),
                    ("根因", case.root_cause),
                    ("处置", case.solution),
                )
                if value
            ),
            exact_terms=tuple(term for term in (case.alert_name, case.error_code) if term),
            section="根因与处置",
        )
        for case in cases
    ]
