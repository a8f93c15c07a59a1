"""The registry: one row per kind, each under its own name and asked by vocabulary words."""

from __future__ import annotations

from diagnosis.pipeline.asks.registry import KINDS
from tests.diagnosis.pipeline.asks.support import VOCABULARY


def test_every_kind_is_asked_by_words_of_the_shipped_vocabulary():
    assert {
        name: bool(getattr(VOCABULARY.asks, kind.words)) for name, kind in KINDS.items()
    } == dict.fromkeys(KINDS, True)


def test_a_kind_is_registered_under_its_own_name_with_a_label_of_its_own():
    assert all(name == kind.name for name, kind in KINDS.items())
    assert len({kind.label for kind in KINDS.values()}) == len(KINDS)
