"""Term matching (`tools.terms`) over the configured world vocabulary (`tools.configured_vocabulary`): what the
tools, the case library and the engines use. The pipeline uses `tools.terms` with the vocabulary
it is handed instead, so it never reads settings.
"""

from __future__ import annotations

from tools import terms
from tools.configured_vocabulary import current_vocabulary
from tools.terms import term_pattern

__all__ = [
    "group_term",
    "group_terms",
    "groups_in",
    "mentioned",
    "query_groups",
    "query_terms",
    "services_aliased",
    "term_pattern",
]


def groups_in(text: str, table: str = "groups") -> set[str]:
    return terms.groups_in(text, vocabulary=current_vocabulary(), table=table)


def query_terms(query: str, table: str = "groups") -> list[tuple[str, tuple[int, int]]]:
    return terms.query_terms(query, vocabulary=current_vocabulary(), table=table)


def query_groups(query: str, table: str = "groups") -> set[str]:
    return terms.query_groups(query, vocabulary=current_vocabulary(), table=table)


def group_term(group: str) -> str:
    """The group's canonical term (listed first): what to search for when a topic is meant."""
    return current_vocabulary().canonical_term(group)


def group_terms(group: str) -> list[str]:
    """Every term of a group: what a log store is searched for when the group is meant."""
    return list(current_vocabulary().groups.get(group, [group]))


def services_aliased(text: str) -> list[str]:
    return terms.services_aliased(text, vocabulary=current_vocabulary())


def mentioned(names: set[str], text: str) -> set[str]:
    return terms.mentioned(names, text, vocabulary=current_vocabulary())
