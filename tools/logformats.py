"""Log lines as their format has them, Django-free: a line's format is read from its shape (never from
a service or file name) and its fields are typed.

- access logs: nginx/Apache combined (with `rt=` / `request_time=` or a trailing request time, and
  `ua=` / `upstream_addr=`), a quoted request line with `status: N … time: F` (OpenStack's WSGI), and
  JSON or logfmt lines that carry a status: status, path, method, upstream address, request time;
- nginx's error log: level, the failed call with its errno (`connect() failed (111: Connection
  refused)`), upstream and request;
- PostgreSQL (`%m [%p] … [%e] LEVEL:  message`): level, the SQLSTATE and its class when `%e` is in
  the prefix, `duration: N ms` and its statement;
- Redis (`pid:role date level message`): level;
- JSON and logfmt lines: level, a duration by its key (`duration_ms`, `request_time`, `took=2.5s`),
  an error type by its key;
- plain text: a duration said after took / 耗时 / duration / slow query, a Java exception's class.

The patterns that read a field are RE2 as well as Python: the Loki source sends the same ones in its
LogQL (`tools.logql`), so code and Loki count the same lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

# Access lines come in two shapes: combined (nginx, Apache) and a WSGI server's request line.
COMBINED_SHAPE, WSGI = "combined", "wsgi"
ACCESS, NGINX_ERROR, POSTGRES, REDIS, JSON, LOGFMT, PLAIN = (
    "access",
    "nginx_error",
    "postgresql",
    "redis",
    "json",
    "logfmt",
    "",
)

# --- Access logs ---------------------------------------------------------------------------------

COMBINED = re.compile(
    r'^(?P<client>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] "(?P<method>[A-Z]+) (?P<path>[^ "]+)'
    r'(?: [^"]*)?" (?P<status>[0-9]{3}) (?P<bytes>[0-9]+|-)(?P<rest>.*)$'
)
# LogQL's pattern for the same lines: the captures the recipes group and filter by.
COMBINED_PATTERN = '<_> - <_> [<_>] "<method> <path> <_>" <status> <_>'
# The request time a combined line adds, in seconds: `rt=0.532` / `request_time=0.532`, or a bare
# number at its end (`… "curl/8.0" 0.532`).
REQUEST_TIME_PAIR = r'(?:^|\s)(?:rt|request_time)="?(?P<request_time>[0-9]+(?:\.[0-9]+)?)"?(?:\s|$)'
REQUEST_TIME_TRAILING = r"\s(?P<request_time>[0-9]+\.[0-9]+)$"
UPSTREAM_PAIR = re.compile(r'(?:^|\s)(?:ua|upstream_addr|upstream)="?(?P<upstream>[^"\s]+)"?')
# A request line followed by its status as OpenStack's WSGI server writes it.
WSGI_REQUEST = (
    r'"(?P<method>[A-Z]+) (?P<path>[^ "]+) HTTP/[0-9.]+" status: (?P<status>[0-9]{3})'
    r"(?: len: [0-9]+ time: (?P<request_time>[0-9]+\.[0-9]+))?"
)

# --- nginx error log -----------------------------------------------------------------------------

NGINX_ERROR_LINE = re.compile(
    r"^(?P<time>\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) \[(?P<level>[a-z]+)\] \d+#\d+: (?:\*\d+ )?(?P<message>.*)$"
)
# The failed system call and its errno: `connect() failed (111: Connection refused)`,
# `open() "/x" failed (2: No such file or directory)`, `upstream timed out (110: Connection timed out)`.
NGINX_FAILURE = r'(?:(?P<call>[a-z_]+)\(\) (?:"[^"]*" )?failed )?\((?P<errno>[0-9]+): (?P<reason>[^)]*)\)'
NGINX_UPSTREAM = re.compile(r', upstream: "(?P<upstream>[^"]*)"')
NGINX_REQUEST = re.compile(r', request: "(?P<method>[A-Z]+) (?P<path>[^ "]+)[^"]*"')
NGINX_ERROR_LEVELS = "error|crit|alert|emerg"

# --- PostgreSQL ----------------------------------------------------------------------------------

POSTGRES_LEVELS = (
    "DEBUG[1-5]|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC|DETAIL|HINT|STATEMENT|CONTEXT|QUERY|LOCATION"
)
# Its message follows its level and two spaces, after a prefix (`%m [%p] %q%u@%d %e `) of a few words.
POSTGRES_LINE = re.compile(
    rf"^(?P<prefix>[^\n]{{0,160}}?)(?:^|\s)(?P<level>{POSTGRES_LEVELS}):  (?P<message>.*)$"
)
POSTGRES_ERROR_LEVELS = "ERROR|FATAL|PANIC"
# The SQLSTATE `%e` writes into the prefix, before the level.
POSTGRES_SQLSTATE = rf"(?:^|\s)(?P<sqlstate>[0-9A-Z]{{5}})\s.*?(?P<severity>{POSTGRES_LEVELS}):  "
POSTGRES_DURATION = r"duration: (?P<duration_ms>[0-9]+(?:\.[0-9]+)?) ms"
POSTGRES_STATEMENT = re.compile(
    r"duration: [0-9.]+ ms  (?:statement|(?:execute|parse|bind) [^:]*): (?P<statement>.*)$"
)
# A level as PostgreSQL writes it, to the one name the product shows; detail lines continue the one before.
POSTGRES_LEVEL_NAMES = {"LOG": "INFO", "NOTICE": "INFO", "INFO": "INFO", "WARNING": "WARN", "PANIC": "FATAL"}
POSTGRES_CONTINUATION = {"DETAIL", "HINT", "STATEMENT", "CONTEXT", "QUERY", "LOCATION"}
# The classes of SQLSTATE codes (their first two characters), as PostgreSQL's Appendix A names them.
SQLSTATE_CLASSES_FILE = Path(__file__).parent / "data" / "postgres_sqlstate_classes.json"

# --- Redis ---------------------------------------------------------------------------------------

REDIS_LINE = re.compile(
    r"^(?P<pid>\d+):(?P<role>[XCSM]) (?P<time>\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}) "
    r"(?P<level>[.\-*#]) (?P<message>.*)$"
)
REDIS_LEVELS = {".": "DEBUG", "-": "DEBUG", "*": "INFO", "#": "WARN"}

# --- JSON and logfmt: fields by their keys (as Loki's parsers name them: nested keys joined by `_`) -

LEVEL_KEYS = ("level", "lvl", "severity", "loglevel", "log_level", "levelname")
STATUS_KEYS = ("status", "status_code", "statusCode", "http_status", "http_status_code", "response_status")
PATH_KEYS = (
    "path",
    "uri",
    "request_uri",
    "request_path",
    "url_path",
    "http_path",
    "http_target",
    "route",
    "url",
)
METHOD_KEYS = ("method", "request_method", "http_method", "http_request_method")
UPSTREAM_KEYS = ("upstream_addr", "upstream", "upstream_address")
# Keys whose number is seconds or milliseconds; any other duration key holds a Go duration ("2.5s").
SECONDS_KEYS = (
    "request_time",
    "upstream_response_time",
    "response_time",
    "duration_seconds",
    "latency_seconds",
)
MILLISECONDS_SUFFIXES = ("_ms", "Ms", "_millis")
DURATION_KEYS = ("duration", "latency", "elapsed", "took", "time_taken")
CLASS_KEYS = (
    "error_type",
    "error_kind",
    "error_class",
    "exception_type",
    "exception_class",
    "exc_type",
    "err_type",
    "exception",
    "error_code",
    "error",
    "err",
)
# The keys a structured line writes what it says under (not a parser label: no query filters by it).
MESSAGE_KEYS = ("message", "msg")
LOGFMT_PAIR = re.compile(r'(?:^|\s)([A-Za-z_][A-Za-z0-9_.\-]*)=("(?:[^"\\]|\\.)*"|[^\s"]*)')
LOGFMT_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*=")
LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_:]")
GO_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
GO_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+$")
GO_UNIT_MS = {"ns": Decimal("0.000001"), "us": Decimal("0.001"), "µs": Decimal("0.001"), "ms": 1, "s": 1000}
GO_UNIT_MS |= {"m": 60_000, "h": 3_600_000}

# --- Plain text ----------------------------------------------------------------------------------

# A duration the line says a thing took (not a timeout it waited for: `timed out after 5000ms`).
PLAIN_DURATION = re.compile(
    r"(?i)(?:\btook|耗时|用时|\belapsed|\bduration|\bslow(?: query| request| sql)?|"
    r"\b(?:completed|finished|served|processed) in)[:=]?\s*"
    r"(\d+(?:\.\d+)?)\s?(ms|milliseconds?|s|secs?|seconds?|min|minutes?|毫秒|秒|分钟)(?![A-Za-z])"
)
EXCEPTION_CLASS = re.compile(r"(?<![\w$.])((?:[a-z_][\w$]*\.)*[A-Z][\w$]*(?:Exception|Error))\b")


@dataclass(frozen=True)
class LineFields:
    """What a line's format says, typed; a field the format does not have is empty."""

    format: str = PLAIN
    level: str = ""
    method: str = ""
    path: str = ""
    status: str = ""
    upstream: str = ""
    # How long the request or statement took, in milliseconds.
    duration_ms: Decimal | None = None
    # The class of an error line: a SQLSTATE class (`40`), an errno (`111: Connection refused`), an
    # exception's class, the value of an error-type key.
    error_class: str = ""
    sqlstate: str = ""
    statement: str = ""
    # The line after its format's prefix (time, process, connection): what its message says.
    message: str = ""
    # For JSON and logfmt lines, the label Loki's parser gives each field (`request_uri`), and how the
    # duration is written (`ms`, `s`, or `go` for "2.5s"); for access lines, which request time.
    labels: tuple[tuple[str, str], ...] = ()
    duration_unit: str = ""
    # An access line's shape: combined or wsgi.
    shape: str = ""

    def label(self, name: str) -> str:
        return dict(self.labels).get(name, "")


@lru_cache(maxsize=8192)
def fields_of(line: str) -> LineFields:
    """The fields of a line, read by its shape; a line of no known format is plain text."""
    stripped = line.strip()
    for reader in (_json_fields, _combined_fields, _nginx_error_fields, _postgres_fields, _redis_fields):
        found = reader(stripped)
        if found is not None:
            return found
    return _logfmt_fields(stripped) or _plain_fields(stripped)


def go_duration_ms(text: str) -> Decimal | None:
    """A Go duration (`2.5s`, `1m30s`, `12ms`) in milliseconds; None when it is not one."""
    if not GO_DURATION.match(text.strip()):
        return None
    return sum((Decimal(n) * GO_UNIT_MS[u] for n, u in GO_DURATION_PART.findall(text)), Decimal(0))


def label_name(key: str) -> str:
    """A key as Loki's parsers name its label: anything but letters, digits, `_` and `:` becomes `_`."""
    name = LABEL_UNSAFE.sub("_", key)
    return f"_{name}" if name[:1].isdigit() else name


def _combined_fields(line: str) -> LineFields | None:
    match = COMBINED.match(line)
    if match is None:
        if (wsgi := re.search(WSGI_REQUEST, line)) is None:
            return None
        seconds = wsgi["request_time"]
        return LineFields(
            format=ACCESS,
            method=wsgi["method"],
            path=wsgi["path"],
            status=wsgi["status"],
            duration_ms=_seconds_ms(seconds),
            duration_unit="s" if seconds else "",
            shape=WSGI,
        )
    rest = match["rest"]
    unit, seconds = "", None
    if found := re.search(REQUEST_TIME_PAIR, rest):
        unit, seconds = "pair", found["request_time"]
    elif found := re.search(REQUEST_TIME_TRAILING, rest):
        unit, seconds = "trailing", found["request_time"]
    upstream = UPSTREAM_PAIR.search(rest)
    return LineFields(
        format=ACCESS,
        method=match["method"],
        path=match["path"],
        status=match["status"],
        upstream=upstream["upstream"] if upstream and upstream["upstream"] != "-" else "",
        duration_ms=_seconds_ms(seconds),
        duration_unit=unit,
        shape=COMBINED_SHAPE,
    )


def _nginx_error_fields(line: str) -> LineFields | None:
    match = NGINX_ERROR_LINE.match(line)
    if match is None:
        return None
    message = match["message"]
    failure = re.search(NGINX_FAILURE, message)
    upstream = NGINX_UPSTREAM.search(message)
    request = NGINX_REQUEST.search(message)
    return LineFields(
        format=NGINX_ERROR,
        level=match["level"],
        message=message,
        method=request["method"] if request else "",
        path=request["path"] if request else "",
        upstream=upstream["upstream"] if upstream else "",
        error_class=nginx_failure_class(failure["call"] or "", failure["errno"], failure["reason"])
        if failure
        else "",
    )


def nginx_failure_class(call: str, errno: str, reason: str) -> str:
    """How a failed call is named: `connect() failed (111: Connection refused)`, or `(110: …)` alone."""
    return f"{call}() failed ({errno}: {reason})" if call else f"({errno}: {reason})"


def _postgres_fields(line: str) -> LineFields | None:
    match = POSTGRES_LINE.match(line)
    if match is None or not _postgres_prefix(match["prefix"]):
        return None
    level, message = match["level"], match["message"]
    sqlstate = re.search(POSTGRES_SQLSTATE, line)
    code = sqlstate["sqlstate"] if sqlstate else ""
    duration = re.search(POSTGRES_DURATION, message)
    statement = POSTGRES_STATEMENT.search(message)
    return LineFields(
        format=POSTGRES,
        level=""
        if level in POSTGRES_CONTINUATION
        else POSTGRES_LEVEL_NAMES.get(level, level.rstrip("12345")),
        sqlstate=code,
        error_class=sqlstate_class(code) if code and re.fullmatch(POSTGRES_ERROR_LEVELS, level) else "",
        duration_ms=Decimal(duration["duration_ms"]) if duration else None,
        statement=statement["statement"] if statement else "",
        message=message,
        duration_unit="ms" if duration else "",
    )


@lru_cache(maxsize=1)
def _sqlstate_classes() -> dict[str, str]:
    return json.loads(SQLSTATE_CLASSES_FILE.read_text(encoding="utf-8"))


def sqlstate_class(code: str) -> str:
    """A SQLSTATE's class as named: `40P01` → `40 Transaction Rollback`; an unknown class by its code."""
    name = _sqlstate_classes().get(code[:2], "")
    return f"{code[:2]} {name}" if name else code[:2]


def _postgres_prefix(prefix: str) -> bool:
    """A log_line_prefix as PostgreSQL writes it: a time (`%m`, `%t`) or a process id (`[%p]`)."""
    return bool(re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|\[\d+\]", prefix))


def _redis_fields(line: str) -> LineFields | None:
    match = REDIS_LINE.match(line)
    if match is None:
        return None
    return LineFields(format=REDIS, level=REDIS_LEVELS[match["level"]], message=match["message"])


def _json_fields(line: str) -> LineFields | None:
    if not line.startswith("{"):
        return None
    try:
        document = json.loads(line)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    return _keyed_fields(JSON, _flattened(document))


def _logfmt_fields(line: str) -> LineFields | None:
    if not LOGFMT_START.match(line):
        return None
    pairs = {}
    for key, value in LOGFMT_PAIR.findall(line):
        if value.startswith('"'):
            value = json.loads(value) if _is_json_string(value) else value.strip('"')
        pairs.setdefault(label_name(key), value)
    return _keyed_fields(LOGFMT, pairs) if len(pairs) >= 2 else None


def _keyed_fields(format_name: str, fields: dict[str, str]) -> LineFields:
    """The fields of a JSON or logfmt line by their keys (the labels Loki's parser gives them)."""
    labels: list[tuple[str, str]] = []

    def first(keys: tuple[str, ...], field: str) -> str:
        key = next((k for k in keys if fields.get(k, "") not in ("", "-")), "")
        if key:
            labels.append((field, key))
        return fields.get(key, "") if key else ""

    method, path = first(METHOD_KEYS, "method"), first(PATH_KEYS, "path")
    request = fields.get("request", "")
    if (not method or not path) and (parts := re.match(r"^([A-Z]+) (\S+)", request)):
        method, path = method or parts[1], path or parts[2]
    status = first(STATUS_KEYS, "status")
    level = first(LEVEL_KEYS, "level")
    duration, unit = _keyed_duration(fields, labels)
    return LineFields(
        format=format_name,
        level=level,
        method=method,
        path=path,
        status=status if re.fullmatch(r"[1-5][0-9]{2}", status) else "",
        upstream=first(UPSTREAM_KEYS, "upstream"),
        duration_ms=duration,
        error_class=first(CLASS_KEYS, "class"),
        message=next((fields[key] for key in MESSAGE_KEYS if fields.get(key)), ""),
        labels=tuple(labels),
        duration_unit=unit,
    )


def _keyed_duration(fields: dict[str, str], labels: list[tuple[str, str]]) -> tuple[Decimal | None, str]:
    for key, value in fields.items():
        if key.endswith(MILLISECONDS_SUFFIXES) and (number := _decimal(value)) is not None:
            labels.append(("duration", key))
            return number, "ms"
        if (key in SECONDS_KEYS or key.endswith("_seconds")) and (number := _decimal(value)) is not None:
            labels.append(("duration", key))
            return number * 1000, "s"
        if key in DURATION_KEYS and (number := go_duration_ms(value)) is not None:
            labels.append(("duration", key))
            return number, "go"
    return None, ""


def _plain_fields(line: str) -> LineFields:
    duration = PLAIN_DURATION.search(line)
    exception = EXCEPTION_CLASS.search(line)
    return LineFields(
        format=PLAIN,
        duration_ms=unit_ms(duration[1], duration[2]) if duration else None,
        error_class=exception[1] if exception else "",
    )


def _flattened(document: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """A JSON document's fields as Loki's `| json` names them: nested keys joined by `_`, arrays left out."""
    flat: dict[str, str] = {}
    for key, value in document.items():
        name = label_name(f"{prefix}{key}")
        if isinstance(value, dict):
            flat.update(_flattened(value, f"{name}_"))
        elif not isinstance(value, list):
            flat.setdefault(name, "" if value is None else _scalar_text(value))
    return flat


def _scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_json_string(text: str) -> bool:
    try:
        return isinstance(json.loads(text), str)
    except ValueError:
        return False


def _decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _seconds_ms(seconds: str | None) -> Decimal | None:
    return Decimal(seconds) * 1000 if seconds else None


def unit_ms(number: str, unit: str) -> Decimal:
    """A number with its unit as written (`2.5 seconds`, `300ms`, `2 秒`) in milliseconds."""
    unit = unit.lower()
    if unit.startswith(("ms", "milli", "毫")):
        return Decimal(number)
    if unit.startswith(("min", "分")):
        return Decimal(number) * 60_000
    return Decimal(number) * 1000
