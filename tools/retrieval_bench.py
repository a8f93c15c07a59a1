"""The retrieval benchmark (`manage.py bench_retrieval`): `tools.retrieval` against plain Okapi BM25
on the same corpus, a fixed snapshot of public runbooks with queries in three groups (the alert
named, the symptom in other English words, the symptom in Chinese).

Both rank the same blocks (one per runbook section, as the runbook folder source splits them); a
query's ranking is the order in which each runbook document first appears. Plain BM25 is bm25s
with its own tokenizer (English stopwords, no stemming, no vocabulary, no exact-term layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bm25s
import yaml
from pydantic import BaseModel, ConfigDict

from tools.knowledge_block import KnowledgeBlock
from tools.retrieval import knowledge_rank
from tools.sources.runbooks import runbook_blocks

BENCH_DIR = Path(__file__).resolve().parent / "data" / "retrieval_bench"
CORPUS_DIR = BENCH_DIR / "prometheus-operator-runbooks"
QUERIES_FILE = BENCH_DIR / "queries.yaml"
# Queries never used to tune the retrieval (their file says how they were written): the half that
# says whether it fits words nobody here chose.
HELD_OUT_FILE = BENCH_DIR / "queries_held_out.yaml"
QUERY_SETS = (("tuning", QUERIES_FILE), ("held-out", HELD_OUT_FILE))
RECALL_AT = 3
DOCUMENT_PREFIX = "runbooks/"


class BenchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str
    query: str
    # The runbook file that answers it, relative to the corpus folder.
    expected: str


class BenchSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: dict[str, str]
    queries: list[BenchQuery]


@dataclass(frozen=True)
class GroupScore:
    group: str
    label: str
    count: int
    recall: float
    mrr: float
    plain_recall: float
    plain_mrr: float


def bench_set(path: Path = QUERIES_FILE) -> BenchSet:
    bench = BenchSet.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    unknown = {q.group for q in bench.queries} - set(bench.groups)
    if unknown:
        raise ValueError(f"{path}: queries name groups it does not list: {sorted(unknown)}")
    return bench


def corpus_blocks(folder: Path = CORPUS_DIR) -> list[KnowledgeBlock]:
    return runbook_blocks(folder)


def documents_ranked(query: str, blocks: list[KnowledgeBlock]) -> list[str]:
    """The runbook documents in the order `tools.retrieval` ranks their sections."""
    hits = knowledge_rank(query=query, blocks=blocks, top_k=len(blocks))
    return _documents([hit.block for hit in hits])


class PlainBM25:
    """Okapi BM25 as bm25s ships it, over the blocks' file name, title, heading and text."""

    def __init__(self, blocks: list[KnowledgeBlock]) -> None:
        self.blocks = blocks
        # The file name too: the alert a runbook is about is often named only there.
        texts = [f"{b.source_document}\n{b.title}\n{b.section}\n{b.content}" for b in blocks]
        self.retriever = bm25s.BM25()
        self.retriever.index(_plain_tokens(texts), show_progress=False)

    def documents_ranked(self, query: str) -> list[str]:
        known = [word for word in _plain_tokens([query])[0] if word in self.retriever.vocab_dict]
        if not known:
            return []
        scores = self.retriever.get_scores(known)
        order = sorted(range(len(self.blocks)), key=lambda i: (-scores[i], i))
        return _documents([self.blocks[i] for i in order if scores[i] > 0])


def _plain_tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def _documents(blocks: list[KnowledgeBlock]) -> list[str]:
    return list(dict.fromkeys(block.source_document.removeprefix(DOCUMENT_PREFIX) for block in blocks))


def recall_and_mrr(rankings: list[tuple[list[str], str]], *, at: int = RECALL_AT) -> tuple[float, float]:
    """recall@`at` (share of queries whose expected document is in the first `at`) and the mean
    reciprocal rank (0 for a query whose expected document is not ranked at all)."""
    if not rankings:
        return 0.0, 0.0
    found = sum(expected in ranked[:at] for ranked, expected in rankings)
    reciprocal = sum(
        1 / (ranked.index(expected) + 1) if expected in ranked else 0.0 for ranked, expected in rankings
    )
    return found / len(rankings), reciprocal / len(rankings)


def bench_run(
    *, bench: BenchSet | None = None, blocks: list[KnowledgeBlock] | None = None
) -> list[GroupScore]:
    bench = bench or bench_set()
    blocks = blocks if blocks is not None else corpus_blocks()
    plain = PlainBM25(blocks)
    scores = []
    for group, label in bench.groups.items():
        queries = [q for q in bench.queries if q.group == group]
        ours = recall_and_mrr([(documents_ranked(q.query, blocks), q.expected) for q in queries])
        theirs = recall_and_mrr([(plain.documents_ranked(q.query), q.expected) for q in queries])
        scores.append(GroupScore(group, label, len(queries), *ours, *theirs))
    return scores
