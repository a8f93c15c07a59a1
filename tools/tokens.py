"""The tokens retrieval ranks with (`tools.retrieval` for runbooks, `tools.metric_search` for metrics):
English words stemmed (Snowball), CamelCase and snake_case names also as their parts, Chinese as
character bigrams. Django-free: the pipeline reads metrics with it."""

from __future__ import annotations

import re

import bm25s
import Stemmer

from tools.terms import name_parts

WORD = re.compile(r"[A-Za-z0-9]+")
CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
STOPWORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)
STEMMER = Stemmer.Stemmer("english")


def words(text: str) -> list[str]:
    """Stemmed English words (a CamelCase or snake_case name also as its parts) and Chinese bigrams."""
    tokens = []
    for word in WORD.findall(text):
        parts = name_parts(word)
        for token in [word, *parts] if len(parts) > 1 else [word]:
            lowered = token.lower()
            if len(lowered) > 1 and lowered not in STOPWORDS:
                tokens.append(lowered)
    stemmed = STEMMER.stemWords(tokens)
    bigrams = [run[i : i + 2] for run in CJK_RUN.findall(text) for i in range(len(run) - 1)]
    return [*stemmed, *bigrams]
