"""LogQL metric queries that count log lines by what their format says, Django-free.

A line's format (`tools.logformats`) has a recipe when LogQL can read the field a count needs: the
same pattern code reads it with (`| regexp`), Loki's own parsers (`| pattern`, `| json`, `| logfmt`), and
the label each field lands in. A count over the window is then `sum(count_over_time(…[60m]))`, by a
field `topk(10, sum by (path) (count_over_time(… | status="404" …)))`, the slowest
`max(max_over_time(… | unwrap duration_ms …))`; every query drops the lines a parser could not read
(`| __error__=""`), as Loki fails a metric query over them otherwise.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from decimal import Decimal

from tools.logcounts import MAX_GROUPS, CountRequest, exact
from tools.logformats import (
    ACCESS,
    COMBINED_PATTERN,
    JSON,
    LOGFMT,
    NGINX_ERROR,
    NGINX_ERROR_LEVELS,
    NGINX_FAILURE,
    POSTGRES,
    POSTGRES_DURATION,
    POSTGRES_ERROR_LEVELS,
    POSTGRES_SQLSTATE,
    REQUEST_TIME_PAIR,
    REQUEST_TIME_TRAILING,
    WSGI,
    WSGI_REQUEST,
    LineFields,
    nginx_failure_class,
    sqlstate_class,
)
from tools.loglines import ERROR_LEVEL_VALUES

NO_ERRORS = '| __error__=""'


@dataclass(frozen=True)
class Recipe:
    """How LogQL reads one format: the pipeline after the stream selector and the labels it yields."""

    pipeline: str
    duration: str = ""
    # How the duration label is written: `ms`, `s` (a number of seconds) or `go` (`2.5s`).
    unit: str = ""
    path: str = "path"
    status: str = "status"
    # The labels that name an error line's class; the level label of a JSON or logfmt line.
    classes: tuple[str, ...] = ()
    level: str = ""

    def field(self, name: str) -> str:
        return {"path": self.path, "status": self.status}[name]


def recipe_of(fields: LineFields, measure: str, *, stream_labels: Collection[str] = ()) -> Recipe | None:
    """The recipe that counts lines of this shape for the measure; None when LogQL cannot (Redis,
    plain text, PostgreSQL without `%e` by class): those are counted over the lines served."""
    recipe = _recipe(fields, measure)
    if recipe is None or fields.format not in (JSON, LOGFMT):
        return recipe

    # A parsed key that is also a label of the line's stream is extracted as `<key>_extracted`.
    def named(label: str) -> str:
        return f"{label}_extracted" if label in stream_labels else label

    return replace(
        recipe,
        duration=named(recipe.duration) if recipe.duration else "",
        path=named(recipe.path),
        status=named(recipe.status),
        classes=tuple(named(label) for label in recipe.classes),
        level=named(recipe.level) if recipe.level else "",
    )


def _recipe(fields: LineFields, measure: str) -> Recipe | None:
    if fields.format == POSTGRES:
        if measure == "slow":
            return Recipe(
                f'|= "duration: " | regexp `{POSTGRES_DURATION}`', duration="duration_ms", unit="ms"
            )
        if measure == "class" and fields.sqlstate:
            return Recipe(
                f"|~ `({POSTGRES_ERROR_LEVELS}):  ` | regexp `{POSTGRES_SQLSTATE}` "
                f'| severity=~"{POSTGRES_ERROR_LEVELS}"',
                classes=("sqlstate",),
            )
        return None
    if fields.format == NGINX_ERROR:
        if measure != "class":
            return None
        return Recipe(
            f"|~ `\\[({NGINX_ERROR_LEVELS})\\]` | regexp `{NGINX_FAILURE}`",
            classes=("call", "errno", "reason"),
        )
    if fields.format == ACCESS:
        return _access_recipe(fields, measure)
    if fields.format in (JSON, LOGFMT):
        return _keyed_recipe(fields, measure)
    return None


def _access_recipe(fields: LineFields, measure: str) -> Recipe | None:
    if measure == "class":
        return None
    if fields.shape == WSGI:
        return Recipe(f'|= "status: " | regexp `{WSGI_REQUEST}`', duration="request_time", unit="s")
    combined = f"| pattern `{COMBINED_PATTERN}`"
    if measure != "slow":
        return Recipe(combined)
    request_time = {"pair": REQUEST_TIME_PAIR, "trailing": REQUEST_TIME_TRAILING}.get(fields.duration_unit)
    if request_time is None:
        return None
    return Recipe(f"{combined} | regexp `{request_time}`", duration="request_time", unit="s")


# Only lines of the format reach its parser: a plain line of another stream is no logfmt line.
JSON_LINE = r"|~ `^\s*\{`"
LOGFMT_LINE = r"|~ `^[A-Za-z_][A-Za-z0-9_.\-]*=`"


def _keyed_recipe(fields: LineFields, measure: str) -> Recipe | None:
    parser = f"{JSON_LINE} | json" if fields.format == JSON else f"{LOGFMT_LINE} | logfmt"
    label = fields.label
    if measure == "slow":
        if not label("duration"):
            return None
        return Recipe(f"{parser} {NO_ERRORS}", duration=label("duration"), unit=fields.duration_unit)
    if measure == "class":
        if not (label("class") and label("level")):
            return None
        return Recipe(f"{parser} {NO_ERRORS}", classes=(label("class"),), level=label("level"))
    if not (label("status") and label("path")):
        return None
    return Recipe(f"{parser} {NO_ERRORS}", path=label("path"), status=label("status"))


# --- Queries ------------------------------------------------------------------------------------


def stream_selector(label: str, service: str) -> str:
    value = service.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{{label}="{value}"}}' if service else f'{{{label}=~".+"}}'


def _range(request: CountRequest) -> str:
    return f"[{request.minutes}m]"


def _threshold(recipe: Recipe, milliseconds: Decimal) -> str:
    """The threshold in the duration label's own unit."""
    if recipe.unit == "ms":
        return exact(milliseconds)
    if recipe.unit == "go":
        return f"{exact(milliseconds)}ms"
    return exact(milliseconds / 1000)


def slow_count_query(selector: str, recipe: Recipe, request: CountRequest) -> str:
    threshold = _threshold(recipe, request.slower_than_ms)
    lines = f"{selector} {recipe.pipeline} | {recipe.duration} > {threshold} {NO_ERRORS}"
    return f"sum(count_over_time({lines} {_range(request)}))"


def slowest_query(selector: str, recipe: Recipe, request: CountRequest) -> str:
    unwrapped = f"duration({recipe.duration})" if recipe.unit == "go" else recipe.duration
    lines = f"{selector} {recipe.pipeline} | unwrap {unwrapped} {NO_ERRORS}"
    return f"max(max_over_time({lines} {_range(request)}))"


def slowest_line_query(selector: str, recipe: Recipe, slowest: str) -> str:
    """The log query for the slowest line, given the slowest value as `slowest_query` answered it."""
    value = f"{slowest}s" if recipe.unit == "go" else slowest
    return f"{selector} {recipe.pipeline} | {recipe.duration} >= {value} {NO_ERRORS}"


def slowest_ms(recipe: Recipe, slowest: str) -> Decimal:
    """The slowest value (`unwrap duration()` answers seconds) in milliseconds."""
    return Decimal(slowest) if recipe.unit == "ms" else Decimal(slowest) * 1000


def _status_filter(recipe: Recipe, request: CountRequest) -> str:
    if not request.status:
        return f'| {recipe.status}=~"[1-5][0-9][0-9]"'
    if request.status.lower().endswith("xx"):
        return f'| {recipe.status}=~"{request.status[0]}[0-9][0-9]"'
    return f'| {recipe.status}="{request.status}"'


def _counted_lines(selector: str, recipe: Recipe, request: CountRequest) -> str:
    if request.measure == "class":
        level = f"| {recipe.level}=~`{ERROR_LEVEL_VALUES}` " if recipe.level else ""
        return f"{selector} {recipe.pipeline} {level}{NO_ERRORS}"
    return f"{selector} {recipe.pipeline} {_status_filter(recipe, request)} {NO_ERRORS}"


def total_query(selector: str, recipe: Recipe, request: CountRequest) -> str:
    return f"sum(count_over_time({_counted_lines(selector, recipe, request)} {_range(request)}))"


def grouped_query(selector: str, recipe: Recipe, request: CountRequest) -> str:
    labels = ", ".join(recipe.classes if request.measure == "class" else (recipe.field(request.measure),))
    counted = f"count_over_time({_counted_lines(selector, recipe, request)} {_range(request)})"
    return f"topk({MAX_GROUPS}, sum by ({labels}) ({counted}))"


# Lines a class query counts that name no class (an nginx error without an errno).
OTHER_CLASS = "其他"


def group_of(recipe: Recipe, request: CountRequest, metric: dict[str, str]) -> dict[str, str]:
    """A group of a grouped query's answer as the count names it: the path or status, or the class
    (a SQLSTATE's class, a failed call with its errno, an error-type key's value)."""
    if request.measure != "class":
        return {request.measure: metric.get(recipe.field(request.measure), "")}
    if recipe.classes == ("sqlstate",):
        code = metric.get("sqlstate", "")
        return {"class": sqlstate_class(code) if code else OTHER_CLASS}
    if recipe.classes == ("call", "errno", "reason"):
        errno = metric.get("errno", "")
        if not errno:
            return {"class": OTHER_CLASS}
        return {"class": nginx_failure_class(metric.get("call", ""), errno, metric.get("reason", ""))}
    return {"class": metric.get(recipe.classes[0], "") or OTHER_CLASS}
