"""What an alert rule's PromQL says, read with a maintained parser (the `threshold` and
`history` asks): the comparison of its `expr`, and the firing episodes in a range of `ALERTS_FOR_STATE`.

Django-free, so the pipeline can read exprs too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
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
# The label names of a metric's series, as the source has them (empty when it cannot say).
LabelNames = Callable[[str], frozenset[str]]


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


# --- Queries a caller writes --------------------------------------------------------------------

_NAME_LABEL = "__name__"


def unnamed_selector(query: str) -> str | None:
    """The first selector of `query` without a metric name (a plain name or `__name__="…"`), as PromQL;
    None when every selector has one, or when the parser cannot read the query (the server names its
    syntax error)."""
    try:
        tree = promql_parser.parse(query)
    except ValueError:
        return None
    unnamed: list[promql_parser.VectorSelector] = []

    def visit(node: promql_parser.Expr) -> bool:
        if isinstance(node, promql_parser.VectorSelector) and not _has_metric_name(node):
            unnamed.append(node)
            return False
        return True

    promql_parser.walk(tree, pre_visit=visit)
    return unnamed[0].prettify() if unnamed else None


def read_back(query: str, *, window: timedelta, now: datetime) -> timedelta:
    """How far before `now` the query reads samples, evaluated over the last `window`: its ranges,
    offsets, subqueries and `@` times. An unreadable query counts its window only."""
    try:
        tree = promql_parser.parse(query)
    except ValueError:
        return window
    return now - _earliest_read(tree, evaluated_from=now - window, now=now, window=window)


def _has_metric_name(selector: promql_parser.VectorSelector) -> bool:
    if selector.name:
        return True
    # `{a="1" or b="2"}`: each alternative selects on its own, so each needs the name.
    alternatives = selector.matchers.or_matchers or [selector.matchers.matchers]
    return all(
        any(m.name == _NAME_LABEL and m.op == promql_parser.MatchOp.Equal for m in matchers)
        for matchers in alternatives
    )


def _earliest_read(
    node: promql_parser.Expr, *, evaluated_from: datetime, now: datetime, window: timedelta
) -> datetime:
    """The earliest sample time the expression reads when evaluated from `evaluated_from` to now."""

    def earliest(child: promql_parser.Expr, start: datetime = evaluated_from) -> datetime:
        return _earliest_read(child, evaluated_from=start, now=now, window=window)

    if isinstance(node, promql_parser.VectorSelector):
        return _at(node.at, evaluated_from, now=now, window=window) - _offset(node.offset)
    if isinstance(node, promql_parser.MatrixSelector):
        return earliest(node.vector_selector) - node.range
    if isinstance(node, promql_parser.SubqueryExpr):
        start = _at(node.at, evaluated_from, now=now, window=window) - _offset(node.offset) - node.range
        return earliest(node.expr, start)
    children: list[promql_parser.Expr] = []
    if isinstance(node, promql_parser.BinaryExpr):
        children = [node.lhs, node.rhs]
    elif isinstance(node, promql_parser.Call):
        children = list(node.args)
    elif isinstance(node, promql_parser.AggregateExpr):
        children = [node.expr] + ([node.param] if node.param is not None else [])
    elif isinstance(node, promql_parser.ParenExpr | promql_parser.UnaryExpr):
        children = [node.expr]
    return min((earliest(child) for child in children), default=evaluated_from)


def _at(
    modifier: promql_parser.AtModifier | None, evaluated_from: datetime, *, now: datetime, window: timedelta
) -> datetime:
    """When a selector with this `@` is evaluated: a fixed time, the query's start or its end."""
    if modifier is None:
        return evaluated_from
    if modifier.type == promql_parser.AtModifierType.At:
        return modifier.at
    return now - window if modifier.type == promql_parser.AtModifierType.Start else now


def _offset(offset: timedelta | None) -> timedelta:
    # A negative offset reads later samples, never earlier ones.
    return max(offset or timedelta(0), timedelta(0))
