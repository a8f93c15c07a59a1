"""Synonym groups shared by log matching and knowledge retrieval, read once from `data/synonyms.json`.

Two tables: `groups` (what a question is about: connection pool, CPU, memory, ...) and `intents`
(what it wants to know: cause, mitigation, ...; only knowledge retrieval uses these).

A term matches case-insensitively; a term that starts or ends with a letter or digit must not be
glued to another one there (`500` does not match `5500ms`, `OOM` does not match `OOMKilled`).
Chinese terms match as substrings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SYNONYMS_FILE = Path(__file__).parent / "data" / "synonyms.json"


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


@cache
def _synonyms() -> dict:
    return json.loads(SYNONYMS_FILE.read_text(encoding="utf-8"))


@cache
def _terms(table: str) -> tuple[Term, ...]:
    terms = [
        Term(group=group, pattern=term_pattern(text), length=len(text))
        for group, texts in _synonyms()[table].items()
        for text in texts
    ]
    return tuple(sorted(terms, key=lambda term: -term.length))


def groups_in(text: str, table: str = "groups") -> set[str]:
    """Every group any of whose terms occurs in the text (for records: recall first)."""
    lowered = text.lower()
    return {term.group for term in _terms(table) if term.pattern.search(lowered)}


def query_terms(query: str, table: str = "groups") -> list[tuple[str, tuple[int, int]]]:
    """(group, span in the lowered query) of each term the query uses. Longer terms win overlaps,
    so `数据库连接池` means the connection pool, not the database."""
    lowered = query.lower()
    found: list[tuple[str, tuple[int, int]]] = []
    for term in _terms(table):
        for match in term.pattern.finditer(lowered):
            if all(match.end() <= start or match.start() >= end for _, (start, end) in found):
                found.append((term.group, match.span()))
    return found


def query_groups(query: str, table: str = "groups") -> set[str]:
    return {group for group, _ in query_terms(query, table)}


def group_term(group: str) -> str:
    """The group's canonical term (listed first): what to search for when a topic is meant."""
    return _synonyms()["groups"][group][0]


def services_aliased(text: str) -> list[str]:
    """Services the text names by an alias (订单服务 → order-service)."""
    lowered = text.lower()
    return [
        service
        for service, aliases in _synonyms()["service_aliases"].items()
        if any(term_pattern(alias).search(lowered) for alias in aliases)
    ]


def mentioned(names: set[str], text: str) -> set[str]:
    """Which of the names (services, instances, or their aliases) the text mentions."""
    lowered = text.lower()
    aliases = _synonyms()["service_aliases"]
    return {
        name
        for name in names
        if any(term_pattern(alias).search(lowered) for alias in [name, *aliases.get(name, [])])
    }


def group_terms(group: str) -> list[str]:
    """Every term of a group: what a log store is searched for when the group is meant."""
    return list(_synonyms()["groups"][group])
