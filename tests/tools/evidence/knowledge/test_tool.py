"""Knowledge lookup: L0 exact hits, L1 ranked similarity, relevance, cases, no blocks for the unknown."""

import pytest
from pydantic import ValidationError

from tests.factories import CaseLibraryFactory
from tests.tools.support import WikiKnowledge, use_source
from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.knowledge.tool import LookupKnowledgeArguments
from tools.sources.demo import DemoWorldSource

pytestmark = pytest.mark.django_db

BLOCK_FIELDS = {
    "block_id",
    "source_document",
    "title",
    "section",
    "content",
    "retrieval_layer",
    "relevance",
    "score",
    "deduped",
    "matched_terms",
}


def test_six_chinese_runbooks_split_by_heading():
    blocks = DemoWorldSource().knowledge_blocks()
    documents = {block.source_document for block in blocks}

    assert documents == {
        "runbooks/high-cpu-usage.md",
        "runbooks/high-memory-usage.md",
        "runbooks/slow-response.md",
        "runbooks/high-disk-usage.md",
        "runbooks/service-unavailable.md",
        "runbooks/hikaricp-connection-pool.md",
    }
    assert all(block.section and block.title.endswith(block.section) for block in blocks)
    assert not any("## " in block.content or block.content.startswith("---") for block in blocks)
    assert len({block.block_id for block in blocks}) == len(blocks)


def test_alert_name_is_an_l0_exact_hit(run_tool):
    output = run_tool("lookup_knowledge", query="HighMemoryUsage")
    blocks = output.records

    assert len(blocks) == 3
    assert all(set(block.stored()) == BLOCK_FIELDS for block in blocks)
    assert {block.source_document for block in blocks} == {"runbooks/high-memory-usage.md"}
    assert {(block.retrieval_layer, block.relevance) for block in blocks} == {("L0", "high")}
    assert not any(block.deduped for block in blocks)
    # Which of the runbook's exact terms the query named: whose runbook each block is.
    assert {tuple(block.matched_terms) for block in blocks} == {("HighMemoryUsage",)}


def test_error_code_is_an_l0_exact_hit(run_tool):
    blocks = run_tool("lookup_knowledge", query="java.lang.OutOfMemoryError 怎么处理").records

    assert blocks[0].retrieval_layer == "L0"
    assert blocks[0].block_id == "high-memory-usage#5"


def test_connection_pool_question_ranks_the_mitigation_section_first(run_tool):
    blocks = run_tool("lookup_knowledge", query="order-service 连接池耗尽怎么处理").records

    assert blocks[0].title == "HikariCP 数据库连接池耗尽处置手册 · 处置措施"
    # Ordered by BM25; the score says how much of the question each block covers.
    assert all(block.score >= 0.3 for block in blocks)


def test_plain_question_is_an_l1_ranked_hit(run_tool):
    blocks = run_tool("lookup_knowledge", query="CPU 使用率高怎么办", top_k=2).records

    assert len(blocks) == 2
    assert blocks[0].retrieval_layer == "L1"
    assert blocks[0].title == "HighCPUUsage CPU 使用率过高处置手册 · 处置措施"
    assert blocks[0].relevance == "high"
    assert blocks[0].score > blocks[1].score


@pytest.mark.parametrize(
    "query",
    ["如何轮换 quantum scheduler token", "怎么配置 kubernetes ingress 证书", "今天天气怎么样", "排查"],
)
def test_unknown_procedure_returns_no_blocks(run_tool, query):
    output = run_tool("lookup_knowledge", query=query)

    assert (output.success, output.records, output.said) == (True, [], "知识库中未找到相关内容")


def test_past_case_is_searchable_and_marked_as_a_case(run_tool):
    case = CaseLibraryFactory(
        title="payment-service Redis 连接超时导致支付失败",
        root_cause="redis-cluster-01 主节点切换期间连接超时",
        solution="调大 Redis 客户端超时并开启重试退避",
        service="payment-service",
        error_code="RedisConnectionTimeout",
    )

    blocks = run_tool("lookup_knowledge", query="RedisConnectionTimeout").records

    assert blocks[0].source_document == f"case:{case.case_id}"
    assert blocks[0].block_id == f"case:{case.case_id}"
    assert blocks[0].retrieval_layer == "L0"
    assert blocks[0].title == "历史案例：payment-service Redis 连接超时导致支付失败"
    assert "根因：redis-cluster-01 主节点切换期间连接超时" in blocks[0].content


def test_the_demo_world_serves_past_cases_beside_the_runbooks():
    case = CaseLibraryFactory(title="order-service 连接池耗尽", alert_name="HighMemoryUsage")

    blocks = DemoWorldSource().knowledge_blocks()

    assert [block.block_id for block in blocks if block.source_document.startswith("case:")] == [
        f"case:{case.case_id}"
    ]
    assert len(blocks) > 1


def test_cases_come_only_from_the_configured_source(run_tool, settings):
    CaseLibraryFactory(title="payment-service Redis 连接超时", error_code="RedisConnectionTimeout")
    use_source(settings, WikiKnowledge, KnowledgeSource)

    blocks = run_tool("lookup_knowledge", query="RedisConnectionTimeout").records

    assert [(block.block_id, block.retrieval_layer) for block in blocks] == [("wiki:redis-failover", "L0")]


def test_block_returned_earlier_in_the_session_comes_back_deduped(run_tool):
    first = run_tool("lookup_knowledge", query="HikariCP").records
    seen = frozenset({first[0].block_id})

    again = run_tool("lookup_knowledge", query="HikariCP", seen_block_ids=seen)

    assert [block.deduped for block in again.records] == [True, False, False]
    assert again.said == "命中 3 个知识块，其中 1 个本会话已返回过（不是新证据）"


def test_top_k_defaults_to_three_and_is_bounded():
    assert LookupKnowledgeArguments(query="CPU").top_k == 3
    with pytest.raises(ValidationError):
        LookupKnowledgeArguments(query="CPU", top_k=0)
