"""`lookup_knowledge`: runbooks and past cases for a question, from the blocks its
source serves, ranked by `tools.retrieval`.

Results are guidance, never current-incident facts. A block already returned earlier in the
session comes back `deduped: true`: it is not new evidence.
"""

from __future__ import annotations

from pydantic import Field

from tools.evidence.knowledge.kind import KNOWLEDGE
from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.result import ToolResult
from tools.evidence.tool import EvidenceTool, ToolArguments, ToolContext, register
from tools.retrieval import knowledge_rank


class LookupKnowledgeArguments(ToolArguments):
    query: str = Field(
        title="问题",
        min_length=1,
        max_length=500,
        description="要查的问题、告警名或错误，如 “连接池耗尽怎么处理”，或一个告警名",
    )
    top_k: int = Field(default=3, title="条数", ge=1, le=10, description="最多返回的知识块数")


@register
class LookupKnowledgeTool(EvidenceTool[KnowledgeSource]):
    kind = KNOWLEDGE
    description = "检索运维知识库（处理手册与历史案例）。结果只是排查参考，不能当作当前故障的事实。"
    arguments_model = LookupKnowledgeArguments

    def run(self, arguments: LookupKnowledgeArguments, context: ToolContext) -> ToolResult:
        hits = knowledge_rank(
            query=arguments.query, blocks=self.source().knowledge_blocks(), top_k=arguments.top_k
        )
        evidence_blocks = [
            {
                "block_id": hit.block.block_id,
                "source_document": hit.block.source_document,
                "title": hit.block.title,
                "section": hit.block.section,
                "content": hit.block.content,
                "retrieval_layer": hit.layer,
                "relevance": hit.relevance,
                "score": hit.score,
                "matched_terms": list(hit.matched_terms),
                "deduped": hit.block.block_id in context.seen_block_ids,
            }
            for hit in hits
        ]
        deduped = sum(block["deduped"] for block in evidence_blocks)
        if not evidence_blocks:
            message = "知识库中未找到相关内容"
        elif deduped:
            message = f"命中 {len(evidence_blocks)} 个知识块，其中 {deduped} 个本会话已返回过（不是新证据）"
        else:
            message = f"命中 {len(evidence_blocks)} 个知识块"
        return self.typed(
            {"success": True, "evidence_blocks": evidence_blocks, "message": message}, arguments
        )
