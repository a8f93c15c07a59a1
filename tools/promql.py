"""What an alert rule's PromQL says, read with a maintained parser (the `threshold` and
`history` asks): the comparison of its `expr`, and the firing episodes in a range of `ALERTS_FOR_STATE`.

Django-free, so the pipeline can read exprs too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import promql_parser

# Each comparison operator and the one that reads the same with its sides swapped (`0.5 < x` is `x > 0.5`).
FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "==": "==", "!=": "!="}
# `a > 0.1 and on() b`: the set operator gates the alert; the comparison is on its left.
SET_OPERATORS = frozenset({"and", "or", "unless"})

# PromQL's number literals (hex, decimal with exponent, Inf, NaN), sign and all.
_NUMBER = r"[-+]?\s*(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[iI][nN][fF]|[nN][aA][nN])"
# Strings and comments, blanked before looking for a number so that `{le="0.5"}` is not one.
_NOT_CODE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`|#[^\n]*')


@dataclass(frozen=True)
class Comparison:
    # The expr side without the comparison, as PromQL text.
    series: str
    # As it reads with the series on the left.
    operator: str
    threshold: Decimal
    # The number as written in the expr.
    threshold_text: str


def comparison_of(expr: str) -> Comparison | None:
    """The comparison of `expr` with a number literal, or None (no such comparison, not PromQL)."""
    try:
        tree = promql_parser.parse(expr)
    except ValueError:  # the parser reports every syntax error so
        return None
    node = _top_comparison(tree)
    if node is None:
        return None
    written_operator = str(node.op)
    number_on_right = _number(node.rhs) is not None
    if number_on_right:
        number, series, operator = _number(node.rhs), node.lhs, written_operator
    else:
        number, series, operator = _number(node.lhs), node.rhs, FLIPPED[written_operator]
    # NaN compares false with everything: no threshold to state (and a Decimal NaN cannot be ordered).
    if number is None or _number(series) is not None or math.isnan(number.val):
        return None
    text = _written(expr, operator=written_operator, value=number.val, number_on_right=number_on_right)
    text = text or number.prettify()
    return Comparison(
        series=_one_line(series.prettify()),
        operator=operator,
        threshold=_decimal(text),
        threshold_text=text,
    )


def syntax_error(query: str) -> str | None:
    """What the parser says of a query that is not PromQL (`unclosed left parenthesis`); None when
    it is."""
    try:
        promql_parser.parse(query)
    except ValueError as exc:  # the parser reports every syntax error so
        return str(exc) or "not PromQL"
    return None


def printed(expr: str) -> str | None:
    """The expr as the parser prints it, on one line (`sum(x) by (job)` â `sum by (job) (x)`), so two
    spellings of one query compare equal; None when it is not PromQL."""
    try:
        return _one_line(promql_parser.parse(expr).prettify())
    except ValueError:  # the parser reports every syntax error so
        return None


def _top_comparison(node: promql_parser.Expr) -> promql_parser.BinaryExpr | None:
    while isinstance(node, promql_parser.ParenExpr | promql_parser.BinaryExpr):
        if isinstance(node, promql_parser.ParenExpr):
            node = node.expr
        elif str(node.op) in SET_OPERATORS:
            node = node.lhs
        else:
            return node if str(node.op) in FLIPPED else None
    return None


def _number(node: promql_parser.Expr) -> promql_parser.NumberLiteral | None:
    while isinstance(node, promql_parser.ParenExpr):
        node = node.expr
    return node if isinstance(node, promql_parser.NumberLiteral) else None


def _written(expr: str, *, operator: str, value: float, number_on_right: bool) -> str:
    """The number next to the comparison operator as `expr` spells it (`1e9`, `0.50`): the parser
    keeps only its float. Empty when not found."""
    code = _NOT_CODE.sub(lambda match: " " * len(match.group()), expr)
    op = re.escape(operator)
    pattern = (
        rf"{op}\s*(?:bool\b\s*)?[(\s]*(?P<number>{_NUMBER})(?![\w.])"
        if number_on_right
        else rf"(?<![\w.])(?P<number>{_NUMBER})[)\s]*{op}(?!=)"
    )
    for match in re.finditer(pattern, code):
        text = re.sub(r"\s+", "", match.group("number"))
        if _value(text) == value:
            return text
    return ""


def _value(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # hex, which float() does not read
        return float(int(text, 16))


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:  # hex again
        return Decimal(int(text, 16))


def _one_line(pretty: str) -> str:
    """The parser's pretty print on one line. Its line breaks fall only between tokens (a newline in
    a string is printed escaped), so joining the lines keeps the PromQL as it was."""
    lines = [line.strip() for line in pretty.splitlines()]
    text = lines[0] if lines else ""
    for line in lines[1:]:
        text += line if text.endswith("(") or line.startswith(")") else f" {line}"
    return text


# --- Series as they exist ------------------------------------------------------------------------

# The subject's place in a vocabulary template: `node_load1{service="{service}"}`. The label written
# there is only a placeholder too: the subject's matcher goes on the label that carries it.
SUBJECT_PLACEHOLDER = "{service}"
_SUBJECT_MATCHER = re.compile(r'(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"\{service\}"')
_GROUPING = re.compile(r"(?P<by>\bby\s*\()(?P<labels>[A-Za-z0-9_,\s]*)\)")
# A vector selector: a metric name and its braces (quoted values may hold braces: the placeholder).
_SELECTOR = re.compile(r'(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)\s*\{(?P<body>(?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
# A metric name as Prometheus writes one unquoted (match the whole name: `$` would let a newline end it).
METRIC_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

# Which label of a metric's series carries a subject's name, None when none does. A source that
# cannot tell its series' labels has no carrier (None): then a template's labels are taken as written.
Carrier = Callable[[str, str], str | None]


def quoted(value: str) -> str:
    """A label value as a PromQL (or LogQL, which quotes alike) string literal's content: the name
    cannot change the query."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def subject_query(template: str, *, subject: str, carrier: Carrier | None) -> str | None:
    """The template on one subject, each selector matching the label that carries the subject in its
    metric's series; None when a selector's metric has no label carrying it (the query would add a
    matcher the series lack, and find nothing)."""
    if not subject:
        return _without_subject(template)
    if carrier is None:
        return template.replace(SUBJECT_PLACEHOLDER, quoted(subject))
    missing = False
    # Written label → the label carrying the subject: a `by (service)` of the template groups by it too.
    carried: dict[str, str] = {}

    def on_subject(match: re.Match[str]) -> str:
        nonlocal missing
        body = match.group("body")
        if not _SUBJECT_MATCHER.search(body):
            return match.group(0)
        label = carrier(match.group("metric"), subject)
        if label is None:
            missing = True
            return match.group(0)
        carried.update((m.group("label"), label) for m in _SUBJECT_MATCHER.finditer(body))
        matcher = f'{label}="{quoted(subject)}"'
        return f"{match.group('metric')}{{{_SUBJECT_MATCHER.sub(lambda _: matcher, body)}}}"

    query = _SELECTOR.sub(on_subject, template)
    if missing or SUBJECT_PLACEHOLDER in query:
        return None
    return _GROUPING.sub(lambda m: m.group("by") + _regrouped(m.group("labels"), carried) + ")", query)


def _without_subject(template: str) -> str:
    """The template on no subject: every series of its metrics (a question about all hosts)."""

    def unmatched(match: re.Match[str]) -> str:
        body = _SUBJECT_MATCHER.sub("", match.group("body"))
        body = ",".join(part for part in (p.strip() for p in body.split(",")) if part)
        return f"{match.group('metric')}{{{body}}}" if body else match.group("metric")

    return _SELECTOR.sub(unmatched, template)


def _regrouped(labels: str, carried: dict[str, str]) -> str:
    names = [carried.get(name.strip(), name.strip()) for name in labels.split(",") if name.strip()]
    return ", ".join(dict.fromkeys(names))


def series_query(metric: str, *, subject: str, carrier: Carrier | None, values: Sequence[str] = ()) -> str:
    """A metric the question names, on the subject and the label values it writes ("/") where a label
    of its series carries them; else as it is (every series of it, each shown with its labels)."""
    if carrier is None or not METRIC_NAME.fullmatch(metric):
        return metric
    matchers: dict[str, str] = {}
    for value in dict.fromkeys(v for v in (subject, *values) if v):
        label = carrier(metric, value)
        if label and label not in matchers:
            matchers[label] = f'{label}="{quoted(value)}"'
    return f"{metric}{{{','.join(matchers.values())}}}" if matchers else metric
