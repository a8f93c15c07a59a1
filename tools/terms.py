"""Term matching over a given world vocabulary (`tools.vocabulary`), Django-free: the pipeline's
guards use it with the vocabulary they are handed; `tools.matching` wraps it with the configured one.

Two tables: `groups` (what a question is about: connection pool, CPU, memory, ...) and `intents`
(what it wants to know: cause, mitigation, ...; only knowledge retrieval uses these). `asks_in`
reads the vocabulary's `asks` words (a question about alerts, a cause, guidance) for the focus.

A term matches case-insensitively; a term that starts or ends with a letter or digit must not be
glued to another one there (`500` does not match `5500ms`, `OOM` does not match `OOMKilled`).
Chinese terms match as substrings.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

from tools.vocabulary import Vocabulary

# The humps of a CamelCase word, its lower-case runs and its digit runs: `OOMKilled` → OOM, Killed.
NAME_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def name_parts(name: str) -> list[str]:
    """The words of a CamelCase or snake_case name as written: `CheckoutErrorRatio` → Checkout,
    Error, Ratio; `node_load1` → node, load, 1 (separators are no part)."""
    return NAME_PART.findall(name)


@dataclass(frozen=True)
class Term:
    group: str
    pattern: re.Pattern[str]
    length: int


@cache
def term_pattern(text: str) -> re.Pattern[str]:
    start = r"(?<![a-z0-9])" if text[0].isascii() and text[0].isalnum() else ""
    end = r"(?![a-z0-9])" if text[-1].isascii() and text[-1].isalnum() else ""
    return re.compile(start + re.escape(text.lower()) + end)


# Terms by (vocabulary, table); the vocabulary object is kept so its id is never reused.
_TERMS: dict[tuple[int, str], tuple[Vocabulary, tuple[Term, ...]]] = {}


def _terms(table: str, vocabulary: Vocabulary) -> tuple[Term, ...]:
    key = (id(vocabulary), table)
    cached = _TERMS.get(key)
    if cached is None or cached[0] is not vocabulary:
        terms = [
            Term(group=group, pattern=term_pattern(text), length=len(text))
            for group, texts in getattr(vocabulary, table).items()
            for text in texts
        ]
        cached = _TERMS[key] = (vocabulary, tuple(sorted(terms, key=lambda term: -term.length)))
    return cached[1]


def groups_in(text: str, *, vocabulary: Vocabulary, table: str = "groups") -> set[str]:
    """Every group any of whose terms occurs in the text (for records: recall first)."""
    lowered = text.lower()
    return {term.group for term in _terms(table, vocabulary) if term.pattern.search(lowered)}


def query_terms(
    query: str, *, vocabulary: Vocabulary, table: str = "groups"
) -> list[tuple[str, tuple[int, int]]]:
    """(group, span in the lowered query) of each term the query uses. Longer terms win overlaps,
    so `数据库连接池` means the connection pool, not the database."""
    lowered = query.lower()
    found: list[tuple[str, tuple[int, int]]] = []
    for term in _terms(table, vocabulary):
        for match in term.pattern.finditer(lowered):
            if all(match.end() <= start or match.start() >= end for _, (start, end) in found):
                found.append((term.group, match.span()))
    return found


def query_groups(query: str, *, vocabulary: Vocabulary, table: str = "groups") -> set[str]:
    return {group for group, _ in query_terms(query, vocabulary=vocabulary, table=table)}


def asks_in(text: str, *, vocabulary: Vocabulary, apart: Collection[str] = ()) -> set[str]:
    """The kinds of ask (`alerts`, `cause`, `guidance`) whose words the text uses. Among the fields
    `apart` (the kinds that exclude each other) longer words win overlaps: the `first` of "first
    step" asks a runbook's step, not which alert comes first. A word inside a longer question word
    ("how" of "how many") is that question word's, not an ask's."""
    lowered = text.lower()
    questions = [
        match.span()
        for word in vocabulary.interrogative_words()
        for match in term_pattern(word).finditer(lowered)
    ]

    def standalone(match: re.Match[str]) -> bool:
        width = match.end() - match.start()
        return not any(s <= match.start() and match.end() <= e and e - s > width for s, e in questions)

    fields = vocabulary.asks.model_dump()
    said = {
        field
        for field, words in fields.items()
        if field not in apart
        and any(standalone(m) for word in words for m in term_pattern(word).finditer(lowered))
    }
    competing = sorted(
        ((field, word) for field in apart for word in fields.get(field, ())), key=lambda item: -len(item[1])
    )
    found: list[tuple[str, tuple[int, int]]] = []
    for field, word in competing:
        for match in term_pattern(word).finditer(lowered):
            if standalone(match) and all(match.end() <= start or match.start() >= end for _, (start, end) in found):
                found.append((field, match.span()))
    return said | {field for field, _ in found}


def services_aliased(text: str, *, vocabulary: Vocabulary) -> list[str]:
    """Services the text names by an alias (a Chinese name of the service, say)."""
    lowered = text.lower()
    return [
        service
        for service, aliases in vocabulary.service_aliases.items()
        if any(term_pattern(alias).search(lowered) for alias in aliases)
    ]


def mentioned(names: set[str], text: str, *, vocabulary: Vocabulary) -> set[str]:
    """Which of the names (services, instances, or their aliases) the text mentions."""
    lowered = text.lower()
    aliases = vocabulary.service_aliases
    return {
        name
        for name in names
        if any(term_pattern(alias).search(lowered) for alias in [name, *aliases.get(name, [])])
    }


def matches(wanted: str | None, value: str) -> bool:
    """A filter a caller typed (a service, a job) holds for a value: unset, or the same name in any case."""
    return not wanted or wanted.strip().lower() == value.lower()
