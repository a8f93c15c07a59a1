"""What a question asks that no ask answers: PASS fails closed (§22).

A question word (`Vocabulary.interrogatives`: 多少、几、哪、是否、为什么、what, how many, which, why …)
is answered when one of the question's asks is of a kind that answers its kind of question
(`AskKind.answers`: a value answers "多少", the alert list "哪些"). A word none answers is read as
not understood: the answer says so (`未能理解所问：「哪个服务最慢」中的「哪」`) and the verdict cannot be
PASS (`diagnosis.pipeline.guards.UnreadAskGuard`). Pure code over the vocabulary's words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.registry import KINDS
from tools.terms import term_pattern
from tools.vocabulary import Vocabulary

UNREAD = "未能理解所问：「{clause}」中的「{words}」"
# A clause of the question, as the gap quotes it.
CLAUSE = re.compile(r"[^，,。；;！!？?\n]+")


def unread_in(text: str, *, asks: Sequence[Ask], vocabulary: Vocabulary) -> list[str]:
    """One gap per clause holding question words no ask of `asks` answers (`text`: the question
    without its window phrase, as the asks were read from it)."""
    answered = {kind for ask in asks for kind in KINDS[ask.kind].answers_of(ask)}
    gaps = []
    for clause in CLAUSE.finditer(text):
        words = [word for word, kind in _question_words(clause.group(0), vocabulary) if kind not in answered]
        if words:
            said = " ".join(clause.group(0).split())
            gaps.append(UNREAD.format(clause=said, words="」「".join(dict.fromkeys(words))))
    return gaps


def _question_words(clause: str, vocabulary: Vocabulary) -> list[tuple[str, str]]:
    """(word as written, its kind) of each question word, longer words first where they overlap
    ("为什么" is one word, not "什么" inside it)."""
    lowered = clause.lower()
    candidates = sorted(
        ((word, kind) for kind, words in vocabulary.interrogatives.items() for word in words),
        key=lambda item: -len(item[0]),
    )
    found: list[tuple[int, int, str]] = []
    for word, kind in candidates:
        for match in term_pattern(word).finditer(lowered):
            if all(match.end() <= start or match.start() >= end for start, end, _ in found):
                found.append((match.start(), match.end(), kind))
    return [(clause[start:end], kind) for start, end, kind in sorted(found)]
