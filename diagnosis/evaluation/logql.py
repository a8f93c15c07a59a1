"""A small LogQL engine for the Loki stand-in (`diagnosis.evaluation.loki`): the subset the product
sends, parsed and evaluated as Loki documents it (https://grafana.com/docs/loki/latest/query/), anything else
a clear parse error (the server answers it 400, as Loki answers a query it cannot parse).

Supported:
- stream selectors `{a="x", b=~"y.+", c!="z", d!~"w"}` (at least one matcher that cannot match "");
- line filters `|=`, `!=`, `|~`, `!~` ("…" or `…` strings), regular expressions in RE2's syntax
  (Go's, as Loki's) and matched by RE2;
- parsers `| json`, `| logfmt`, `| pattern "<a> <_> …"`, `| regexp "(?P<a>…)"`: extracted labels
  (nested JSON keys joined by `_`, names made label-safe, `_extracted` after a stream label's name),
  `__error__` for a line `| json` cannot parse;
- label filters `| name op value` chained by `and`, `or` or `,` (left to right): strings with `=`,
  `!=`, `=~`, `!~`; numbers and durations (`1.5s`) with `==`, `=`, `!=`, `>`, `>=`, `<`, `<=`; a value that
  does not convert keeps the line and adds `__error__`;
- `| unwrap label`, `| unwrap duration(label)` / `duration_seconds(label)`, then label filters;
- range aggregations `count_over_time`, `rate`, `bytes_over_time`, `sum_over_time`, `avg_over_time`,
  `min_over_time`, `max_over_time`, `first_over_time`, `last_over_time`, `quantile_over_time(φ, …)`
  over `[duration]` (`by`/`without` for the unwrapped ones that allow it);
- vector aggregations `sum`, `avg`, `min`, `max`, `count` with `by`/`without` before or after, and
  `topk(k, …)`, `bottomk(k, …)`;
- binary operators between metric queries and numbers, in Prometheus's precedence: `*`, `/`, then
  `+`, `-`, then `and`, `unless`, then `or` (vectors matched on their whole label set), and parentheses.
A metric query whose samples carry `__error__` fails with Loki's pipeline error.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import operator
import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import re2

NS = 10**9


class LogQLError(ValueError):
    """A query this engine (or Loki) refuses: answered 400 with its message."""


# --- Tokens -------------------------------------------------------------------------------------

DURATION_TEXT = r"(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h|d|w|y))+"
TOKEN = re.compile(
    rf"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"|`[^`]*`)
    |(?P<duration>{DURATION_TEXT})(?![A-Za-z0-9_])
    |(?P<number>[0-9]+(?:\.[0-9]+)?)(?![A-Za-z0-9_])
    |(?P<op>\|=|\|~|!=|!~|=~|==|>=|<=|[{{}}()\[\],|=<>])
    |(?P<ident>--?[A-Za-z_][A-Za-z0-9_-]*|[A-Za-z_][A-Za-z0-9_:]*)
    |(?P<arithmetic>[*/+-])
    )""",
    re.VERBOSE,
)


@dataclass
class Token:
    kind: str
    text: str

    @property
    def value(self) -> str:
        if self.kind != "string":
            return self.text
        return self.text[1:-1] if self.text.startswith("`") else json.loads(self.text)


def tokens_of(query: str) -> list[Token]:
    found, position = [], 0
    query = query.rstrip()
    while position < len(query):
        match = TOKEN.match(query, position)
        if match is None or match.end() == position:
            raise LogQLError(
                f"parse error : syntax error: unexpected input {query[position : position + 20]!r}"
            )
        kind = match.lastgroup or "op"
        found.append(Token(kind, match.group(kind)))
        position = match.end()
    return found


# --- The query as parsed ------------------------------------------------------------------------


@dataclass
class Stage:
    """One step of a log pipeline: `kind` is filter, json, logfmt, pattern, regexp, labels, unwrap."""

    kind: str
    op: str = ""
    text: str = ""
    # label filters: [(joiner, name, op, value, value kind)]
    predicates: list[tuple[str, str, str, str, str]] = field(default_factory=list)


@dataclass
class LogQuery:
    matchers: list[tuple[str, str, str]]
    stages: list[Stage]

    @property
    def unwrap(self) -> Stage | None:
        return next((stage for stage in self.stages if stage.kind == "unwrap"), None)


@dataclass
class RangeAggregation:
    function: str
    query: LogQuery
    range_seconds: float
    parameter: float | None = None
    grouping: tuple[str, tuple[str, ...]] | None = None


@dataclass
class VectorAggregation:
    operator: str
    inner: Any
    parameter: float | None = None
    grouping: tuple[str, tuple[str, ...]] | None = None


@dataclass
class BinaryOperation:
    """`left op right`: each side a metric query or a number (a float)."""

    operator: str
    left: Any
    right: Any


# Binary operators from the loosest binding to the tightest.
PRECEDENCE = (("or",), ("and", "unless"), ("+", "-"), ("*", "/"))
ARITHMETIC = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": lambda a, b: a / b if b else math.nan,
}


LOG_RANGE = {"count_over_time", "rate", "bytes_over_time"}
UNWRAPPED_RANGE = {
    "rate",
    "sum_over_time",
    "avg_over_time",
    "min_over_time",
    "max_over_time",
    "first_over_time",
    "last_over_time",
    "quantile_over_time",
}
UNGROUPED_RANGE = {"count_over_time", "rate", "bytes_over_time", "sum_over_time"}
VECTOR_OPERATORS = {"sum", "avg", "min", "max", "count", "topk", "bottomk"}


class Parser:
    def __init__(self, query: str) -> None:
        self.tokens = tokens_of(query)
        self.position = 0

    def parse(self) -> LogQuery | RangeAggregation | VectorAggregation:
        if not self.tokens:
            raise LogQLError("parse error : syntax error: unexpected end of input")
        expression = self.binary()
        if isinstance(expression, float):
            raise LogQLError("parse error : a query needs at least one metric query, not only numbers")
        if self.peek() is not None:
            raise LogQLError(f"parse error : syntax error: unexpected {self.peek().text!r}")
        return expression

    def peek(self, offset: int = 0) -> Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, text: str | None = None, kind: str | None = None) -> Token:
        token = self.peek()
        if (
            token is None
            or (text is not None and token.text != text)
            or (kind is not None and token.kind != kind)
        ):
            wanted = text or kind
            got = token.text if token else "end of input"
            raise LogQLError(f"parse error : syntax error: unexpected {got!r}, expecting {wanted!r}")
        self.position += 1
        return token

    def binary(self, level: int = 0):
        """An expression of binary operators from `PRECEDENCE[level]` on (left-associative)."""
        if level == len(PRECEDENCE):
            return self.operand()
        left = self.binary(level + 1)
        while (token := self.peek()) is not None and token.text in PRECEDENCE[level]:
            self.position += 1
            right = self.binary(level + 1)
            for side in (left, right):
                if isinstance(side, LogQuery):
                    raise LogQLError(
                        f"parse error : syntax error: {token.text} needs metric queries, not a log query"
                    )
            if isinstance(left, float) and isinstance(right, float):
                raise LogQLError("parse error : a query needs at least one metric query, not only numbers")
            if token.text in ("or", "and", "unless") and (
                isinstance(left, float) or isinstance(right, float)
            ):
                raise LogQLError(f"parse error : {token.text} needs vectors on both sides")
            left = BinaryOperation(token.text, left, right)
        return left

    def operand(self):
        token = self.peek()
        if token is None:
            raise LogQLError("parse error : syntax error: unexpected end of input")
        if token.kind == "number":
            self.position += 1
            return float(token.text)
        if token.text == "(":
            self.position += 1
            inner = self.binary()
            self.take(")")
            return inner
        return self.expression()

    def expression(self):
        token = self.peek()
        if token.text == "{":
            return self.log_query()
        if token.kind == "ident" and token.text in VECTOR_OPERATORS:
            return self.vector_aggregation()
        if token.kind == "ident" and (token.text in LOG_RANGE or token.text in UNWRAPPED_RANGE):
            return self.range_aggregation()
        raise LogQLError(
            f"parse error : syntax error: unexpected {token.text!r} (not supported by this test server)"
        )

    def grouping(self) -> tuple[str, tuple[str, ...]] | None:
        token = self.peek()
        if token is None or token.text not in ("by", "without"):
            return None
        self.position += 1
        self.take("(")
        labels = []
        while self.peek().text != ")":
            labels.append(self.take(kind="ident").text)
            if self.peek().text == ",":
                self.position += 1
        self.take(")")
        return token.text, tuple(labels)

    def vector_aggregation(self) -> VectorAggregation:
        operator = self.take(kind="ident").text
        grouping = self.grouping()
        self.take("(")
        parameter = None
        if operator in ("topk", "bottomk"):
            parameter = float(self.take(kind="number").text)
            self.take(",")
        inner = self.binary()
        if isinstance(inner, LogQuery | float):
            raise LogQLError(f"parse error : syntax error: {operator} needs a metric query")
        self.take(")")
        grouping = grouping or self.grouping()
        return VectorAggregation(operator, inner, parameter, grouping)

    def range_aggregation(self) -> RangeAggregation:
        function = self.take(kind="ident").text
        self.take("(")
        parameter = None
        if function == "quantile_over_time":
            parameter = float(self.take(kind="number").text)
            self.take(",")
        query = self.log_query(in_range=True)
        self.take("[")
        range_seconds = duration_seconds(self.take(kind="duration").text)
        self.take("]")
        self.take(")")
        grouping = self.grouping()
        unwrapped = query.unwrap is not None
        if unwrapped and function not in UNWRAPPED_RANGE:
            raise LogQLError(f"parse error : invalid aggregation {function} with unwrap")
        if not unwrapped and function not in LOG_RANGE:
            raise LogQLError(f"parse error : invalid aggregation {function} without unwrap")
        if grouping and (function in UNGROUPED_RANGE or not unwrapped):
            raise LogQLError(f"parse error : grouping not allowed for {function} aggregation")
        return RangeAggregation(function, query, range_seconds, parameter, grouping)

    def log_query(self, *, in_range: bool = False) -> LogQuery:
        self.take("{")
        matchers = []
        while self.peek().text != "}":
            name = self.take(kind="ident").text
            op = self.take().text
            if op not in ("=", "!=", "=~", "!~"):
                raise LogQLError(f"parse error : syntax error: unexpected {op!r} in a stream selector")
            matchers.append((name, op, self.take(kind="string").value))
            if self.peek().text == ",":
                self.position += 1
        self.take("}")
        if not any(op in ("=", "=~") and not full_match(value, "") for _, op, value in matchers):
            raise LogQLError(
                "parse error : queries require at least one regexp or equality matcher that does not have an "
                'empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will'
            )
        stages = []
        while (token := self.peek()) is not None and token.text not in ("[", ")"):
            stages.append(self.stage())
        if not in_range and self.peek() is not None and self.peek().text == "[":
            raise LogQLError("parse error : syntax error: a range needs an aggregation")
        return LogQuery(matchers, stages)

    def stage(self) -> Stage:
        token = self.take()
        if token.text in ("|=", "!=", "|~", "!~"):
            return Stage("filter", op=token.text, text=self.take(kind="string").value)
        if token.text != "|":
            raise LogQLError(f"parse error : syntax error: unexpected {token.text!r}")
        name = self.peek()
        if name.kind == "ident" and name.text in ("json", "logfmt") and not self._label_predicate_ahead():
            self.position += 1
            if self.peek() is not None and (self.peek().kind == "ident" or self.peek().kind == "string"):
                raise LogQLError(
                    f"parse error : {name.text} with parameters or flags is not supported by this test server"
                )
            return Stage(name.text)
        if name.kind == "ident" and name.text in ("pattern", "regexp"):
            self.position += 1
            return self._checked(Stage(name.text, text=self.take(kind="string").value))
        if name.kind == "ident" and name.text == "unwrap":
            self.position += 1
            label = self.take(kind="ident").text
            if (
                label in ("duration", "duration_seconds", "bytes")
                and self.peek() is not None
                and self.peek().text == "("
            ):
                if label == "bytes":
                    raise LogQLError("parse error : unwrap bytes() is not supported by this test server")
                self.take("(")
                inner = self.take(kind="ident").text
                self.take(")")
                return Stage("unwrap", op="duration", text=inner)
            return Stage("unwrap", text=label)
        if name.kind == "ident" and self._label_predicate_ahead():
            return self.label_filters()
        raise LogQLError(
            f"parse error : syntax error: unexpected {name.text!r} (not supported by this test server)"
        )

    def _label_predicate_ahead(self) -> bool:
        following = self.peek(1)
        return following is not None and following.text in ("=", "!=", "=~", "!~", "==", ">", ">=", "<", "<=")

    def label_filters(self) -> Stage:
        stage = Stage("labels")
        joiner = "and"
        while True:
            name = self.take(kind="ident").text
            op = self.take().text
            value = self.take()
            if value.kind not in ("string", "number", "duration"):
                raise LogQLError(f"parse error : syntax error: unexpected {value.text!r} in a label filter")
            if value.kind == "string" and op not in ("=", "!=", "=~", "!~"):
                raise LogQLError(f"parse error : syntax error: {op} needs a number or a duration")
            stage.predicates.append((joiner, name, op, value.value, value.kind))
            following = self.peek()
            if following is not None and (following.text in ("and", "or", ",")):
                joiner = "or" if following.text == "or" else "and"
                self.position += 1
                continue
            return stage

    @staticmethod
    def _checked(stage: Stage) -> Stage:
        if stage.kind == "regexp" and not re2_compiled(stage.text).groupindex:
            raise LogQLError("parse error : at least one named capture must be supplied")
        if stage.kind == "pattern":
            parts = pattern_parts(stage.text)
            if not any(kind == "capture" and text != "_" for kind, text in parts):
                raise LogQLError("parse error : at least one capture is required")
            if any(a[0] == b[0] == "capture" for a, b in pairwise(parts)):
                raise LogQLError(
                    "parse error : found consecutive capture: two captures must be separated by literals"
                )
        return stage


def parse(query: str) -> LogQuery | RangeAggregation | VectorAggregation | BinaryOperation:
    return Parser(query).parse()


# --- Values -------------------------------------------------------------------------------------

DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_UNITS |= {"w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise LogQLError(f"parse error : invalid duration {text!r}")
    return sum(float(number) * DURATION_UNITS[unit] for number, unit in parts)


def go_duration_seconds(text: str) -> float | None:
    """A label value as Go's time.ParseDuration reads it (no days or years); None when it is not one."""
    if not re.fullmatch(r"(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+", text):
        return None
    return duration_seconds(text)


def full_match(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, text) is not None


def sample_text(value: float) -> str:
    """A sample as Loki writes it (Go's FormatFloat 'f', -1): `37`, `2.336512`, `NaN`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    text = repr(value)
    return format(value, "f").rstrip("0") if "e" in text else text


# --- Pipelines ----------------------------------------------------------------------------------

LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_:]")


@dataclass
class Entry:
    ns: int
    line: str
    labels: dict[str, str]
    value: float | None = None


def stream_matches(labels: dict[str, str], matchers: list[tuple[str, str, str]]) -> bool:
    for name, op, value in matchers:
        actual = labels.get(name, "")
        if (op == "=" and actual != value) or (op == "!=" and actual == value):
            return False
        if op in ("=~", "!~") and full_match(value, actual) != (op == "=~"):
            return False
    return True


def piped(entry: Entry, stages: list[Stage], stream: dict[str, str]) -> Entry | None:
    """The entry through the pipeline (labels extracted and filtered, a value unwrapped), or None
    when a filter drops it."""
    for stage in stages:
        if stage.kind == "filter":
            found = stage.text in entry.line if stage.op in ("|=", "!=") else _search(stage.text, entry.line)
            if found != (stage.op in ("|=", "|~")):
                return None
        elif stage.kind in ("json", "logfmt", "pattern", "regexp"):
            _extract(entry, stage, stream)
        elif stage.kind == "labels":
            if not _labels_pass(entry, stage):
                return None
        elif stage.kind == "unwrap":
            _unwrap(entry, stage)
    return entry


# RE2 logs a pattern it cannot parse to stderr too; the error raised says it to the caller.
QUIET = re2.Options()
QUIET.log_errors = False


# A line is filtered again by every query that asks again.
@functools.lru_cache(maxsize=2**20)
def _search(pattern: str, line: str) -> bool:
    return re2_compiled(pattern).search(line) is not None


@functools.cache
def re2_compiled(pattern: str) -> re2._Regexp:
    """The pattern as Loki compiles it: Go's regexp is RE2 (its syntax; linear time on a long line,
    where Python's backtracking `re` can take a thousand times as long). Its error says what is wrong."""
    try:
        return re2.compile(pattern, QUIET)
    except re2.error as exc:
        raise LogQLError(f"parse error : invalid regexp {pattern!r}: {exc}") from None


def _extract(entry: Entry, stage: Stage, stream: dict[str, str]) -> None:
    if stage.kind == "json":
        try:
            document = json.loads(entry.line)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            entry.labels["__error__"] = "JSONParserErr"
            return
        found = _flattened(document)
    elif stage.kind == "logfmt":
        found = {
            key: json.loads(value) if value.startswith('"') else value
            for key, value in re.findall(r'(?:^|\s)([^\s=]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)', entry.line)
        }
    elif stage.kind == "regexp":
        match = re2_compiled(stage.text).search(entry.line)
        found = {
            name: value for name, value in (match.groupdict() if match else {}).items() if value is not None
        }
    else:
        found = pattern_match(stage.text, entry.line)
    for key, value in found.items():
        name = LABEL_UNSAFE.sub("_", key)
        if name in stream:
            name = f"{name}_extracted"
        entry.labels.setdefault(name, value)


def _flattened(document: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flattened(value, f"{name}_"))
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        elif value is None:
            flat[name] = ""
        elif not isinstance(value, list):
            flat[name] = str(value)
    return flat


def pattern_parts(pattern: str) -> list[tuple[str, str]]:
    """A pattern expression as ("literal", text) and ("capture", name) in order."""
    parts = []
    for piece in re.split(r"(<[A-Za-z_][A-Za-z0-9_]*>)", pattern):
        if re.fullmatch(r"<[A-Za-z_][A-Za-z0-9_]*>", piece):
            parts.append(("capture", piece[1:-1]))
        elif piece:
            parts.append(("literal", piece))
    return parts


def pattern_match(pattern: str, line: str) -> dict[str, str]:
    """Captures from the line start (or the literal before) to the next literal (or the line end);
    a literal not found stops the match, keeping what was captured."""
    parts, found, position = pattern_parts(pattern), {}, 0
    for index, (kind, text) in enumerate(parts):
        if kind == "literal":
            if index == 0:
                if not line.startswith(text):
                    return {}
                position = len(text)
            continue
        following = parts[index + 1][1] if index + 1 < len(parts) else None
        end = len(line) if following is None else line.find(following, position)
        if end < 0:
            return found
        if text != "_":
            found[text] = line[position:end]
        position = end + (len(following) if following is not None else 0)
    return found


def _labels_pass(entry: Entry, stage: Stage) -> bool:
    result = True
    for joiner, name, op, value, kind in stage.predicates:
        held = _predicate(entry, name, op, value, kind)
        result = (result and held) if joiner == "and" else (result or held)
    return result


def _predicate(entry: Entry, name: str, op: str, value: str, kind: str) -> bool:
    actual = entry.labels.get(name, "")
    if kind == "string":
        if op in ("=", "!="):
            return (actual == value) == (op == "=")
        return full_match(value, actual) == (op == "=~")
    converted = go_duration_seconds(actual) if kind == "duration" else _float(actual)
    if converted is None:
        # Loki keeps a line whose label does not convert, and marks it.
        entry.labels.setdefault("__error__", "LabelFilterErr")
        return True
    wanted = duration_seconds(value) if kind == "duration" else float(value)
    return {
        "=": converted == wanted,
        "==": converted == wanted,
        "!=": converted != wanted,
        ">": converted > wanted,
        ">=": converted >= wanted,
        "<": converted < wanted,
        "<=": converted <= wanted,
    }[op]


def _unwrap(entry: Entry, stage: Stage) -> None:
    raw = entry.labels.pop(stage.text, "")
    value = go_duration_seconds(raw) if stage.op == "duration" else _float(raw)
    if value is None:
        entry.labels.setdefault("__error__", "SampleExtractionErr")
    entry.value = value


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# --- Evaluation ---------------------------------------------------------------------------------

Labels = tuple[tuple[str, str], ...]


def key_of(labels: dict[str, str]) -> Labels:
    """A label set as a key; a label with an empty value is no label (as in Prometheus)."""
    return tuple(sorted((name, value) for name, value in labels.items() if value != ""))


class Evaluator:
    """Evaluates parsed queries over streams `[(labels, [(ns, line)])]`."""

    def __init__(
        self,
        streams: list[tuple[dict[str, str], list[tuple[int, str]]]],
        *,
        span: tuple[int, int] | None = None,
    ) -> None:
        self.streams = streams
        # A range query's steps read one pass of each log query over the span they cover, each sliced
        # out of it, rather than piping a line again at every step whose range holds it.
        self._span = span
        self._piped: dict[int, list[Entry]] = {}

    def over(self, start_ns: int, end_ns: int) -> Evaluator:
        """This evaluator for the steps of one range query, which read lines in (start, end]."""
        return Evaluator(self.streams, span=(start_ns, end_ns))

    def entries(self, query: LogQuery, start_ns: int, end_ns: int) -> list[Entry]:
        """The entries of the query's streams with start < ns <= end, through its pipeline."""
        found = []
        for stream, lines in self.streams:
            if not stream_matches(stream, query.matchers):
                continue
            # Each stream's lines are in time order.
            first = bisect.bisect_right(lines, start_ns, key=lambda item: item[0])
            last = bisect.bisect_right(lines, end_ns, key=lambda item: item[0])
            for ns, line in lines[first:last]:
                entry = piped(Entry(ns, line, dict(stream)), query.stages, stream)
                if entry is not None:
                    found.append(entry)
        return found

    def _entries_in(self, query: LogQuery, start_ns: int, end_ns: int) -> list[Entry]:
        if self._span is None or start_ns < self._span[0] or end_ns > self._span[1]:
            return self.entries(query, start_ns, end_ns)
        piped = self._piped.get(id(query))
        if piped is None:
            piped = sorted(self.entries(query, *self._span), key=_entry_time)
            self._piped[id(query)] = piped
        first = bisect.bisect_right(piped, start_ns, key=_entry_time)
        return piped[first : bisect.bisect_right(piped, end_ns, key=_entry_time)]

    def vector(self, expression, at_ns: int) -> dict[Labels, float]:
        """An instant vector: the expression's value per label set at `at_ns`."""
        if isinstance(expression, RangeAggregation):
            return self._range(expression, at_ns)
        if isinstance(expression, BinaryOperation):
            return self._binary(expression, at_ns)
        inner = self.vector(expression.inner, at_ns)
        return _aggregated(expression, inner)

    def _binary(self, operation: BinaryOperation, at_ns: int) -> dict[Labels, float]:
        left = operation.left if isinstance(operation.left, float) else self.vector(operation.left, at_ns)
        right = operation.right if isinstance(operation.right, float) else self.vector(operation.right, at_ns)
        if operation.operator == "or":
            return left | {labels: value for labels, value in right.items() if labels not in left}
        if operation.operator == "and":
            return {labels: value for labels, value in left.items() if labels in right}
        if operation.operator == "unless":
            return {labels: value for labels, value in left.items() if labels not in right}
        combine = ARITHMETIC[operation.operator]
        if isinstance(right, float):
            return {labels: combine(value, right) for labels, value in left.items()}
        if isinstance(left, float):
            return {labels: combine(left, value) for labels, value in right.items()}
        return {labels: combine(value, right[labels]) for labels, value in left.items() if labels in right}

    def _range(self, aggregation: RangeAggregation, at_ns: int) -> dict[Labels, float]:
        start = at_ns - int(aggregation.range_seconds * NS)
        series: dict[Labels, list[Entry]] = defaultdict(list)
        for entry in self._entries_in(aggregation.query, start, at_ns):
            if entry.labels.get("__error__"):
                error = entry.labels["__error__"]
                raise LogQLError(
                    f"pipeline error: '{error}' for series: '{_selector_text(entry.labels)}'.\n"
                    f'Use a label filter to intentionally skip this error. (e.g | __error__!="{error}").\n'
                    'To skip all potential errors you can match empty errors.(e.g __error__="")\n'
                    'The label filter can also be specified after unwrap. (e.g | unwrap latency | __error__="" )\n'
                )
            series[key_of(_grouped(entry.labels, aggregation.grouping))].append(entry)
        return {labels: _over_time(aggregation, entries) for labels, entries in series.items() if entries}


def _entry_time(entry: Entry) -> int:
    return entry.ns


def longest_range(expression) -> float:
    """The longest `[range]` of a metric query's range aggregations, in seconds (0 for a number)."""
    if isinstance(expression, RangeAggregation):
        return expression.range_seconds
    if isinstance(expression, BinaryOperation):
        return max(longest_range(expression.left), longest_range(expression.right))
    if isinstance(expression, VectorAggregation):
        return longest_range(expression.inner)
    return 0.0


def _selector_text(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{name}="{value}"' for name, value in sorted(labels.items())) + "}"


def _grouped(labels: dict[str, str], grouping: tuple[str, tuple[str, ...]] | None) -> dict[str, str]:
    if grouping is None:
        return labels
    how, names = grouping
    if how == "by":
        return {name: value for name, value in labels.items() if name in names}
    return {name: value for name, value in labels.items() if name not in names}


def _over_time(aggregation: RangeAggregation, entries: list[Entry]) -> float:
    function = aggregation.function
    if function == "count_over_time":
        return float(len(entries))
    if function == "bytes_over_time":
        return float(sum(len(e.line.encode()) for e in entries))
    if function == "rate" and aggregation.query.unwrap is None:
        return len(entries) / aggregation.range_seconds
    values = [e.value for e in sorted(entries, key=lambda e: e.ns) if e.value is not None]
    if function == "rate":
        return sum(values) / aggregation.range_seconds
    if function == "quantile_over_time":
        return quantile(aggregation.parameter, values)
    return {
        "sum_over_time": sum,
        "avg_over_time": lambda v: sum(v) / len(v),
        "min_over_time": min,
        "max_over_time": max,
        "first_over_time": lambda v: v[0],
        "last_over_time": lambda v: v[-1],
    }[function](values)


def quantile(phi: float, values: list[float]) -> float:
    """Prometheus's quantile: linear between the closest ranks of the sorted values."""
    if phi < 0:
        return -math.inf
    if phi > 1:
        return math.inf
    ordered = sorted(values)
    rank = phi * (len(ordered) - 1)
    lower = math.floor(rank)
    upper = min(lower + 1, len(ordered) - 1)
    weight = rank - lower
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def _aggregated(aggregation: VectorAggregation, inner: dict[Labels, float]) -> dict[Labels, float]:
    operator = aggregation.operator
    groups: dict[Labels, list[tuple[Labels, float]]] = defaultdict(list)
    for labels, value in inner.items():
        groups[key_of(_grouped(dict(labels), aggregation.grouping or ("by", ())))].append((labels, value))
    if operator in ("topk", "bottomk"):
        k = int(aggregation.parameter)
        kept: dict[Labels, float] = {}
        for members in groups.values():
            ordered = sorted(members, key=lambda item: item[1], reverse=operator == "topk")
            kept.update(ordered[:k])
        return kept
    combine = {
        "sum": sum,
        "avg": lambda v: sum(v) / len(v),
        "min": min,
        "max": max,
        "count": lambda v: float(len(v)),
    }[operator]
    return {labels: combine([value for _, value in members]) for labels, members in groups.items()}
