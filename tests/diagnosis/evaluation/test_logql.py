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


@pytest.mark.parametrize(
    "query", ['{service="ledger"} |~ `(?<=a)b`', '{service="ledger"} | regexp `(?P<x>a)(?=b)`']
)
def test_a_pattern_go_cannot_compile_is_a_parse_error_as_loki_answers_it(query):
    with pytest.raises(LogQLError, match="invalid regexp"):
        Evaluator(STREAMS).entries(parse(query), 0, 60 * NS)


def test_the_steps_of_a_range_query_each_count_their_own_window_of_one_pass_over_its_span():
    lines = [
        (second * NS, "ERROR write failed" if second % 3 == 0 else "INFO synced") for second in range(1, 200)
    ]
    streams = [({"service": "ledger"}, lines), ({"service": "storefront"}, [(15 * NS, "error: page")])]
    errors_rate = parse('sum by (service) (rate({service=~".+"} |~ `(?i:error)` [1m]))')
    over_span = Evaluator(streams).over(0, 200 * NS)
    for at in (30, 60, 61, 150, 199):
        window = [line for ns, line in lines if (at - 60) * NS < ns <= at * NS]
        errors = sum("ERROR" in line for line in window)
        assert over_span.vector(parse(ERRORS), at * NS)[(("service", "ledger"),)] == errors
        assert over_span.vector(errors_rate, at * NS)[(("service", "ledger"),)] == pytest.approx(errors / 60)
    # A window reaching past the span is read from the streams, not from the span's pass.
    lines.append((240 * NS, "ERROR late"))
    assert over_span.vector(parse(ERRORS), 299 * NS) == {(("service", "ledger"),): 1.0}
