"""Knowledge retrieval: L0 exact hits and L1 Okapi BM25 over runbook sections and past cases.

L0: the query names one of a block's exact terms (alert name, file stem, error code, exact phrase).
L1: BM25 (`bm25s`) over each block's title, section heading and text: English words stemmed
(Snowball) and split at CamelCase and snake_case, Chinese as character bigrams. Both sides are
expanded with the vocabulary's bilingual terms: a term of a topic group or of `ops_terms` adds
that entry as one token, so `磁盘` in a question meets `filesystem` in a runbook; the question's
intent (cause, mitigation …) is matched against the block's section heading. Blocks are ordered
by BM25 (term frequency and section length count there); a block's score, what says whether it is
relevant at all and how much, is the share of the question's idf weight it holds (tokens no block
has count too), so words every runbook uses count little and words no block knows pull it down.
Below `L1_MIN_SCORE` nothing is returned: an unknown procedure gets no blocks rather than the
least bad ones.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import bm25s

from tools.configured_vocabulary import vocabulary_path
from tools.knowledge_block import KnowledgeBlock
from tools.matching import groups_in, query_terms, term_pattern
from tools.tokens import CJK_RUN, words

L1_MIN_SCORE = 0.3
# An L0 block scores at least this, the rest of the range by its similarity.
L0_FLOOR = 0.5
RELEVANCE_LEVELS = ((0.7, "high"), (0.45, "medium"), (0.0, "low"))
# Topic entries and intents carry meaning that single words and bigrams only approximate: a query
# counts each of them this many times.
MEANING_WEIGHT = 2
# Tables of the vocabulary whose terms stand for each other across languages.
MEANING_TABLES = (("groups", "g:"), ("ops_terms", "t:"))

# Past cases (`case:<id>`) are ranked by how closely their topics fit the question: a broad case
# ("现在系统有哪些告警") touching every topic must not outrank the runbook of the one asked.
CASE_PREFIX = "case:"
# bm25s sets its own logger to DEBUG when imported (after the logging settings) and logs every index
# build: back to the project's level.
logging.getLogger("bm25s").setLevel(logging.WARNING)


@dataclass(frozen=True)
class Hit:
    block: KnowledgeBlock
    layer: str
    score: float
    # The block's exact terms the query names (an L0 hit has at least one): whose runbook it is.
    matched_terms: tuple[str, ...] = ()
    # Its section heading answers what the query wants (mitigation, diagnosis …).
    answers_intent: bool = False

    @property
    def relevance(self) -> str:
        return next(level for floor, level in RELEVANCE_LEVELS if self.score >= floor)


def _meanings(text: str) -> list[str]:
    return sorted(f"{prefix}{name}" for table, prefix in MEANING_TABLES for name in groups_in(text, table))


def block_tokens(block: KnowledgeBlock) -> tuple[str, ...]:
    return _block_tokens(block, _vocabulary_key())


def _vocabulary_key() -> tuple[str, int]:
    """Which vocabulary file (and version of it) the tokens were expanded with."""
    path = vocabulary_path()
    return str(path), path.stat().st_mtime_ns


# Bounded: case blocks come and go with the case library.
@lru_cache(maxsize=4096)
def _block_tokens(block: KnowledgeBlock, vocabulary: tuple[str, int]) -> tuple[str, ...]:
    text = f"{block.title}\n{block.section}\n{block.content}"
    # A block shares its document's subject, which the document's exact terms name.
    meanings = set(_meanings(text)) | set(_meanings(" ".join(block.exact_terms)))
    intents = {f"i:{intent}" for intent in groups_in(block.section, "intents")}
    return (*words(text), *sorted(meanings | intents))


def query_tokens(query: str) -> tuple[str, ...]:
    """A query's terms count as their entry or intent: `怎么办` adds the mitigation intent, not the
    bigrams `怎么` and `么办`; `磁盘` adds the disk entry, whose terms are in either language."""
    found: set[str] = set()
    chinese: list[tuple[int, int]] = []
    for table, prefix in (*MEANING_TABLES, ("intents", "i:")):
        for name, (start, end) in query_terms(query, table):
            found.add(f"{prefix}{name}")
            # A Chinese term stands for its entry only; an English one is also a word of its own.
            if not query[start:end].isascii():
                chinese.append((start, end))
    text = query
    for start, end in chinese:
        text = text[:start] + " " * (end - start) + text[end:]
    return tuple(dict.fromkeys([*words(text), *sorted(found)]))


@dataclass(frozen=True)
class _Index:
    retriever: bm25s.BM25
    frequency: Counter
    size: int
    # Whether any block has a Chinese bigram: in a corpus without one, a query's bigrams cannot tell
    # blocks apart and say nothing about relevance (its Chinese terms still count, as their entries).
    has_chinese: bool


def _index(blocks: tuple[KnowledgeBlock, ...]) -> _Index:
    return _vocabulary_index(blocks, _vocabulary_key())


@lru_cache(maxsize=8)
def _vocabulary_index(blocks: tuple[KnowledgeBlock, ...], vocabulary: tuple[str, int]) -> _Index:
    corpus = [list(block_tokens(block)) or ["\x00"] for block in blocks]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    frequency = Counter(token for tokens in corpus for token in set(tokens))
    return _Index(retriever, frequency, len(blocks), any(map(_is_bigram, frequency)))


def _is_bigram(token: str) -> bool:
    return bool(CJK_RUN.fullmatch(token))


def bm25_scores(
    query: tuple[str, ...], blocks: tuple[KnowledgeBlock, ...]
) -> tuple[list[float], dict[str, float]]:
    """Each block's BM25 score for the query tokens (meaning tokens weighted), and each token's
    weight: its idf (the Lucene variant bm25s uses; a token no block has at its highest) times its
    count in the weighted query."""
    index = _index(blocks)
    if not index.has_chinese:
        query = tuple(token for token in query if not _is_bigram(token))
    weighted = [t for token in query for t in [token] * _weight(token)]
    if not weighted or not index.size:
        return [0.0] * len(blocks), {}
    scores = index.retriever.get_scores(weighted)
    weights = {
        token: _weight(token)
        * math.log(1 + (index.size - index.frequency[token] + 0.5) / (index.frequency[token] + 0.5))
        for token in query
    }
    return [float(score) for score in scores], weights


def _weight(token: str) -> int:
    return MEANING_WEIGHT if token[1:2] == ":" else 1


def knowledge_rank(*, query: str, blocks: list[KnowledgeBlock], top_k: int) -> list[Hit]:
    """Blocks the query names (L0) or that cover enough of it (L1), ordered by BM25. A block's score
    is the share of the query's idf weight it holds: what says whether it is relevant at all."""
    wanted = query_tokens(query)
    ordered = tuple(blocks)
    scores, weights = bm25_scores(wanted, ordered)
    total = sum(weights.values())
    intents = {token for token in wanted if token.startswith("i:")}
    lowered = query.lower()
    ranked = []
    for block, bm25 in zip(ordered, scores, strict=True):
        shared = set(wanted) & set(block_tokens(block))
        # Sharing only the intent ("怎么处理") says nothing about the subject.
        topical = any(not token.startswith("i:") for token in shared)
        similarity = sum(weights[token] for token in shared) / total if total and topical else 0.0
        if similarity and block.source_document.startswith(CASE_PREFIX):
            similarity *= _topic_precision(set(wanted), set(block_tokens(block)))
        named = tuple(term for term in block.exact_terms if term_pattern(term).search(lowered))
        answers = bool(intents & set(block_tokens(block)))
        if named:
            hit = Hit(block, "L0", round(L0_FLOOR + (1 - L0_FLOOR) * similarity, 3), named, answers)
        elif similarity >= L1_MIN_SCORE:
            hit = Hit(block, "L1", round(similarity, 3))
        else:
            continue
        ranked.append((hit, bm25 * (similarity > 0)))
    # Named documents first, their sections that answer what the query wants before the others, a
    # runbook's before a past case's (the runbook is the team's procedure); then BM25.
    ranked.sort(
        key=lambda pair: (
            pair[0].layer != "L0",
            not pair[0].answers_intent,
            pair[0].block.source_document.startswith(CASE_PREFIX),
            -pair[1],
            pair[0].block.block_id,
        )
    )
    return [hit for hit, _ in ranked[:top_k]]


def _topic_precision(wanted: set[str], block: set[str]) -> float:
    """Share of the block's topics (groups) that the question asks about; 1.0 when either has none."""
    asked = {token for token in wanted if token.startswith("g:")}
    topics = {token for token in block if token.startswith("g:")}
    if not asked or not topics:
        return 1.0
    return len(asked & topics) / len(topics)
