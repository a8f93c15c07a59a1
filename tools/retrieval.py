"""Knowledge retrieval: L0 exact hits and L1 ranked text similarity over runbook and case blocks.

L0: the query names one of a block's exact terms (alert name, error code, exact phrase).
L1: share of the query's weighted features (synonym groups, words, Chinese character bigrams,
and the intent of the question matched against the block's section: cause, mitigation, ...) found
in the block, each feature weighted by how rare it is across the blocks, so words every
runbook uses count little and words no block knows pull the score down. Below `L1_MIN_SCORE`
nothing is returned: an unknown procedure gets no blocks rather than the least bad ones.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from tools.matching import groups_in, query_terms, term_pattern

L1_MIN_SCORE = 0.3
# An L0 block scores at least this, the rest of the range by its similarity.
L0_FLOOR = 0.5
# Synonym groups and intents carry meaning that single words and bigrams only approximate.
MEANING_WEIGHT = 2.0
RELEVANCE_LEVELS = ((0.7, "high"), (0.45, "medium"), (0.0, "low"))

# Past cases (`case:<id>`) are ranked by how closely their topics fit the question: a broad case
# ("现在系统有哪些告警") touching every topic must not outrank the runbook of the one asked.
CASE_PREFIX = "case:"
TOKEN = re.compile(r"[a-z0-9](?:[a-z0-9_.=/\-]*[a-z0-9])?")
CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")


@dataclass(frozen=True)
class KnowledgeBlock:
    block_id: str
    source_document: str
    title: str
    content: str
    exact_terms: tuple[str, ...] = ()
    # The section heading ("常见原因", "处置措施"): what kind of question the block answers.
    section: str = ""


@dataclass(frozen=True)
class Hit:
    block: KnowledgeBlock
    layer: str
    score: float
    # The block's exact terms the query names (an L0 hit has at least one): whose runbook it is.
    matched_terms: tuple[str, ...] = ()

    @property
    def relevance(self) -> str:
        return next(level for floor, level in RELEVANCE_LEVELS if self.score >= floor)


def _features(text: str, *, groups: set[str], intents: set[str]) -> frozenset[str]:
    lowered = text.lower()
    words = {f"w:{word}" for word in TOKEN.findall(lowered) if len(word) > 1}
    bigrams = {f"b:{run[i : i + 2]}" for run in CJK_RUN.findall(lowered) for i in range(len(run) - 1)}
    meaning = {f"g:{group}" for group in groups} | {f"i:{intent}" for intent in intents}
    return frozenset(words | bigrams | meaning)


# Bounded: case blocks come and go with the case library.
@lru_cache(maxsize=4096)
def _block_features(block: KnowledgeBlock) -> frozenset[str]:
    text = f"{block.title}\n{block.content}"
    # A block shares its document's subject, which the document's exact terms name.
    groups = groups_in(text) | groups_in(" ".join(block.exact_terms))
    return _features(text, groups=groups, intents=groups_in(block.section, "intents"))


def _query_features(query: str) -> frozenset[str]:
    """A query's terms count as their group or intent only: `怎么办` adds the mitigation intent,
    not the bigrams `怎么` and `么办` that would dilute the score."""
    text = query.lower()
    meanings: dict[str, set[str]] = {}
    for table in ("groups", "intents"):
        found = query_terms(text, table)
        meanings[table] = {name for name, _ in found}
        for _, (start, end) in found:
            text = text[:start] + " " * (end - start) + text[end:]
    return _features(text, groups=meanings["groups"], intents=meanings["intents"])


def knowledge_rank(*, query: str, blocks: list[KnowledgeBlock], top_k: int) -> list[Hit]:
    wanted = _query_features(query)
    features = [_block_features(block) for block in blocks]
    frequency = Counter(feature for block_features in features for feature in block_features)

    def weight(feature: str) -> float:
        rarity = math.log(1 + len(blocks) / (1 + frequency[feature]))
        return rarity * (MEANING_WEIGHT if feature[:2] in ("g:", "i:") else 1.0)

    total = sum(weight(feature) for feature in wanted)
    lowered = query.lower()
    hits = []
    for block, block_features in zip(blocks, features, strict=True):
        shared = wanted & block_features
        # Sharing only the intent ("怎么处理") says nothing about the subject.
        topical = any(not feature.startswith("i:") for feature in shared)
        similarity = sum(weight(feature) for feature in shared) / total if total and topical else 0.0
        if similarity and block.source_document.startswith(CASE_PREFIX):
            similarity *= _topic_precision(wanted, block_features)
        named = tuple(term for term in block.exact_terms if term_pattern(term).search(lowered))
        if named:
            hits.append(Hit(block, "L0", round(L0_FLOOR + (1 - L0_FLOOR) * similarity, 3), named))
        elif similarity >= L1_MIN_SCORE:
            hits.append(Hit(block, "L1", round(similarity, 3)))
    hits.sort(key=lambda hit: (-hit.score, hit.layer, hit.block.block_id))
    return hits[:top_k]


def _topic_precision(wanted: frozenset[str], block_features: frozenset[str]) -> float:
    """Share of the block's topics (synonym groups) that the question asks about; 1.0 when either has none."""
    asked = {f for f in wanted if f.startswith("g:")}
    topics = {f for f in block_features if f.startswith("g:")}
    if not asked or not topics:
        return 1.0
    return len(asked & topics) / len(topics)
