"""The Loki stand-in's LogQL engine beyond what the Loki server tests cover: binary operators between
metric queries (Prometheus's precedence, vectors matched on their labels) and line filters whose
case-insensitive parts are searched lower-cased, with the same answers as Python's `re` ignoring case."""

import re

import pytest

from diagnosis.evaluation.logql import NS, Evaluator, LogQLError, _search, parse

STREAMS = [
    ({"service": "ledger"}, [(10 * NS, "INFO synced"), (20 * NS, "ERROR write failed"), (30 * NS, "Error: retry")]),
    ({"service": "storefront"}, [(15 * NS, "INFO page served")]),
]  # fmt: skip
ERRORS = 'sum by (service) (count_over_time({service=~".+"} |~ `(?i:error)` [1m]))'
LINES = 'sum by (service) (count_over_time({service=~".+"} [1m]))'


def vector(query: str) -> dict[str, float]:
    found = Evaluator(STREAMS).vector(parse(query), 60 * NS)
    return {dict(labels).get("service", ""): value for labels, value in found.items()}


def test_or_keeps_the_left_series_and_adds_the_rights_others():
    assert vector(f"{ERRORS} or {LINES} * 0") == {"ledger": 2.0, "storefront": 0.0}


def test_arithmetic_binds_tighter_than_or_and_matches_vectors_on_their_labels():
    assert vector(f"{ERRORS} / {LINES}") == {"ledger": 2 / 3}
    assert vector(f"({LINES} - 1) * 2") == {"ledger": 4.0, "storefront": 0.0}
    assert vector(f"{LINES} unless {ERRORS}") == {"storefront": 1.0}
    assert vector(f"{LINES} and {ERRORS}") == {"ledger": 3.0}


@pytest.mark.parametrize("query", ["1 + 2", f"{LINES} or 1", '{service="ledger"} or {service="x"}'])
def test_numbers_alone_and_log_queries_are_no_operands(query):
    with pytest.raises(LogQLError):
        parse(query)


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i:error|err|fatal|critical|crit|severe|panic)|^E\d{4} |^F\d{4} ",
        r"(?i)timeout|refused",
        r"(?i)\Stimeout",
        r"(?i:[A-Z]+ERR)|(?i:(?:x|y)z)",
        r"WARN|(?i:fail)",
    ],
)
def test_a_case_insensitive_filter_finds_what_python_finds_ignoring_case(pattern):
    lines = [
        "E0102 disk",
        "e0102 disk",
        "Connection REFUSED",
        " TIMEOUT",
        "xTimeout",
        "ABCerr",
        "YZ",
        "warn",
        "FAIL",
    ]
    flags, body = (re.IGNORECASE, pattern[4:]) if pattern.startswith("(?i)") else (0, pattern)
    assert [_search(pattern, line) for line in lines] == [
        bool(re.search(body, line, flags)) for line in lines
    ]
