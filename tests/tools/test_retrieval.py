"""Knowledge retrieval: BM25 over runbook sections, a Chinese question finds an English
runbook through the vocabulary's bilingual terms, the named runbook's steps sections come first, and
a question nothing answers gets nothing. On the shipped vocabulary and on a second world's own."""

import json

import pytest

from tools.knowledge_block import KnowledgeBlock
from tools.retrieval import knowledge_rank, query_tokens, words


def runbook(stem: str, sections: dict[str, str], *, title: str = "") -> list[KnowledgeBlock]:
    """One runbook file's blocks, as the runbook folder source splits it."""
    return [
        KnowledgeBlock(
            block_id=f"runbooks/{stem}.md#{index}",
            source_document=f"runbooks/{stem}.md",
            title=f"{title or stem} · {heading}",
            content=content,
            exact_terms=(stem,),
            section=heading,
        )
        for index, (heading, content) in enumerate(sections.items(), start=1)
    ]


# Two worlds' runbooks: the same kinds of trouble under other names and words.
WORLDS = {
    "kubernetes": {
        "disk": runbook(
            "NodeFilesystemAlmostOutOfSpace",
            {
                "Meaning": "A filesystem on the node has less than 5% space left.",
                "Diagnosis": "- Check which directories use the space with `du`.",
                "Mitigation": "1. Remove old container images.\n2. Grow the volume.",
            },
        ),
        "certificate": runbook(
            "KubeletServerCertificateExpiration",
            {
                "Meaning": "The kubelet server certificate expires in less than 7 days.",
                "Mitigation": "1. Renew the certificate and restart nothing until it is checked.",
            },
        ),
        "chinese": {"disk": "节点磁盘快满了怎么办", "certificate": "证书快过期了"},
    },
    "ledger": {
        "disk": runbook(
            "LedgerJournalFull",
            {
                "Meaning": "The ledger journal filesystem is almost full.",
                "Diagnosis": "1. Compare journal size with the retention window.",
                "Mitigation": "1. Archive closed periods.",
            },
        ),
        "certificate": runbook(
            "LedgerTlsExpiry",
            {
                "Meaning": "The TLS certificate of the ledger gateway is expiring.",
                "Mitigation": "1. Rotate the gateway certificate.",
            },
        ),
        "chinese": {"disk": "账本日志磁盘空间快写满", "certificate": "网关证书即将到期"},
    },
}
per_world = pytest.mark.parametrize("world", WORLDS, ids=list(WORLDS))


def corpus(world: str) -> list[KnowledgeBlock]:
    return [*WORLDS[world]["disk"], *WORLDS[world]["certificate"]]


def test_words_are_stemmed_names_split_and_chinese_in_bigrams():
    assert words("KubePodCrashLooping restarts") == [
        "kubepodcrashloop",
        "kube",
        "pod",
        "crash",
        "loop",
        "restart",
    ]
    assert words("node_load1 磁盘满") == ["node", "load1", "load", "磁盘", "盘满"]


def test_a_chinese_term_stands_for_its_entry_not_for_its_bigrams():
    tokens = query_tokens("磁盘快满了怎么办")

    assert {"t:disk", "t:full", "i:mitigation"} <= set(tokens)
    assert "磁盘" not in tokens and "怎么" not in tokens


@per_world
@pytest.mark.parametrize("trouble", ["disk", "certificate"])
def test_a_chinese_question_finds_the_english_runbook(world, trouble):
    hits = knowledge_rank(query=WORLDS[world]["chinese"][trouble], blocks=corpus(world), top_k=3)

    assert hits, "nothing found"
    assert hits[0].block.source_document == WORLDS[world][trouble][0].source_document
    assert hits[0].layer == "L1"


@per_world
def test_the_named_runbooks_steps_come_first_then_its_other_sections(world):
    stem = WORLDS[world]["disk"][0].exact_terms[0]

    hits = knowledge_rank(query=f"{stem} 怎么处理", blocks=corpus(world), top_k=3)

    assert [hit.block.section for hit in hits][:1] == ["Mitigation"]
    assert {hit.layer for hit in hits} == {"L0"}
    assert all(hit.matched_terms == (stem,) for hit in hits)


@per_world
@pytest.mark.parametrize("query", ["如何轮换 quantum scheduler token", "今天天气怎么样", "怎么处理"])
def test_a_question_no_runbook_answers_gets_nothing(world, query):
    assert knowledge_rank(query=query, blocks=corpus(world), top_k=3) == []


def test_a_worlds_own_bilingual_terms_are_read_from_its_vocabulary(settings, tmp_path):
    # A world whose runbooks say "ledger" for what its engineers call 账本.
    vocabulary = tmp_path / "vocabulary.json"
    vocabulary.write_text(json.dumps({"extends": True, "ops_terms": {"ledger": ["账本", "ledger"]}}))
    blocks = [
        *runbook("LedgerLag", {"Meaning": "The ledger replica lags behind the primary."}),
        *corpus("kubernetes"),
    ]
    assert knowledge_rank(query="账本怎么处理", blocks=blocks, top_k=1) == []

    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(vocabulary)}

    [hit] = knowledge_rank(query="账本怎么处理", blocks=blocks, top_k=1)
    assert hit.block.source_document == "runbooks/LedgerLag.md"
