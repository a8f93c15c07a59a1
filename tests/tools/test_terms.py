"""The kinds of ask a question's words name: a word inside a longer question word is that question
word's ("how" of "how many" asks no guidance), on the shipped vocabulary and the second world's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.terms import asks_in
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

WORLDS = {
    "demo": vocabulary_load(DEFAULT_VOCABULARY_FILE),
    "second": vocabulary_load(Path(__file__).parents[1] / "world" / "vocabulary.json"),
}


@pytest.mark.parametrize("world", sorted(WORLDS))
@pytest.mark.parametrize(
    ("question", "guidance"),
    [
        ("How many PostgreSQL connections are in use against max_connections?", False),
        ("How long has the probe been down?", False),
        ("How much memory does billing use?", False),
        ("How do I fix checkout?", True),
        ("how to restart billing", True),
        ("为什么 checkout 慢", True),
    ],
)
def test_guidance_is_asked_by_its_own_words_not_inside_a_question_word(world, question, guidance):
    assert ("guidance" in asks_in(question, vocabulary=WORLDS[world])) is guidance
