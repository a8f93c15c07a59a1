"""A question as code reads it, once per session: its window, its scope (how narrow, what it
excludes), its focus (what it names, read against the session's `World`) and its asks.

The orchestrator reads it before the first round; every round and stage reads this one object and
none parses the question's text again. Pure code over plain data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.measured import MetricWords
from diagnosis.pipeline.asks.reader import asks_read, without_window
from diagnosis.pipeline.asks.unread import unread_in
from diagnosis.pipeline.focus import QuestionFocus, World
from diagnosis.pipeline.scope import scope_parse
from diagnosis.pipeline.windows import Window, window_in


@dataclass(frozen=True)
class Question:
    text: str
    window: Window
    narrow_scope: bool
    # What the question itself excludes, as the user wrote it.
    excluded_topics: tuple[str, ...]
    # What it names and asks about, minus what it excludes.
    focus: QuestionFocus
    asks: tuple[Ask, ...]
    # What it asks that no ask answers (`未能理解所问：…`): the verdict cannot be PASS.
    unread: tuple[str, ...] = ()
    # The focus read again without what a planner excluded beyond the question, once per such list.
    _narrowed: dict[tuple[str, ...], QuestionFocus] = field(default_factory=dict, compare=False, repr=False)

    def excluded_with(self, planned: Sequence[str]) -> list[str]:
        """What the user excluded: the planner's list plus what code read from the question itself, so
        the boundary never depends on a model remembering it."""
        return list(dict.fromkeys([*planned, *self.excluded_topics]))

    def focus_without(self, excluded: Sequence[str], *, world: World) -> QuestionFocus:
        """The focus once `excluded` is left out: the question's own when it excludes nothing more."""
        if set(excluded) == set(self.excluded_topics):
            return self.focus
        key = tuple(excluded)
        if key not in self._narrowed:
            narrowed = world.focus_of(query=self.text, excluded=key)
            self._narrowed[key] = replace(narrowed, measured=self.focus.measured)
        return self._narrowed[key]


def question_read(*, query: str, world: World) -> Question:
    """The question read against the session's world: its window up to the world's now (the log
    source's window when it names none), its scope, its focus and its asks."""
    narrow, excluded = scope_parse(query)
    window = window_in(query, now=world.now, default_minutes=world.logs_window_minutes)
    focus = world.focus_of(query=query, excluded=excluded)
    inventory = world.inventory
    words = MetricWords(
        metric_catalog=world.metric_catalog,
        vocabulary=world.vocabulary,
        carrier=world.carrier,
        label_names=world.label_names,
        known_names=frozenset(inventory.services | inventory.alerts | inventory.runbooks),
        queried=world.series_queried,
    )
    asks = asks_read(query=query, focus=focus, vocabulary=world.vocabulary, window=window, metric_words=words)
    if any(ask.quantity for ask in asks):
        focus = world.measured_focus(focus)
    unread = unread_in(without_window(query, window), asks=asks, vocabulary=world.vocabulary)
    return Question(
        text=query,
        window=window,
        narrow_scope=narrow,
        excluded_topics=tuple(excluded),
        focus=focus,
        asks=tuple(asks),
        unread=tuple(unread),
    )
