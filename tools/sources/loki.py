"""Loki HTTP API: LogQL over the look-back window, newest first, with the tenant header.

The query is built from the service (its label), the terms of the topics the question is about and
its other words, each as a whole word: `{service="billing"} |~ "…(?i:oom)…"`. A query
for errors only filters by level: in the stream selector where a level label exists, by the level
parsed from the line otherwise. Code then keeps only the lines the same word and level rules accept.

Log series (`query_logql`) are LogQL metric queries over the last minutes, one point a minute.

Counts (`count_logs`) read the newest lines first (the error lines for a count by class) to learn
the formats the service writes; each format LogQL can read (`tools.logql`) is then counted over the
whole window with instant metric queries, the others over those newest lines, said as a sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings

from tools.bounds import OutputBounds, SeriesKept
from tools.clock import local_text
from tools.evidence.log_patterns.source import LogPatternsSource
from tools.evidence.log_series.source import LogSeriesSource
from tools.evidence.logs.source import LogSource
from tools.inventory import SourceInventory
from tools.logcounts import (
    WINDOW,
    CountRequest,
    Line,
    LogCounts,
    counted_in_code,
    counts_merged,
    exact,
    sample_of,
)
from tools.loglines import (
    ERROR_IN_LINE,
    ERROR_LEVEL_VALUES,
    LEVEL_LABELS,
    has_word,
    is_error_level,
    level_of,
    logql_words,
)
from tools.logql import (
    Recipe,
    group_of,
    grouped_query,
    recipe_of,
    slow_count_query,
    slowest_line_query,
    slowest_ms,
    slowest_query,
    stream_selector,
    total_query,
)
from tools.matching import group_terms, query_terms
from tools.promql import quoted
from tools.records import service_of
from tools.sources.http import HttpSource

# The most lines one call asks for: the tool's own `limit` maximum.
MAX_LINES = 100
# The newest lines a count reads to learn the formats (and counts in code where LogQL cannot).
SAMPLE_LINES = 500
# The most series a metric query of a count may answer (its groups are a topk of fewer).
MAX_SERIES = 100
INSTANCE_LABELS = ("instance", "pod", "host", "hostname")
# Question words searched literally when they are not a known topic term (`idx_user_id`, `退款`).
LITERAL_WORD = re.compile(r"[a-z0-9_.:/\-]{4,}|[\u4e00-\u9fff]{2,}")


# A log series has one point a minute: a `[1m]` count is then every line once.
SERIES_STEP = timedelta(minutes=1)
# A pattern's text as a series label: its head (a pattern is one line's words, some kilobytes long).
MAX_PATTERN_CHARS = 300
EQUALITY_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


class LokiSource(HttpSource, LogSource, LogSeriesSource, LogPatternsSource):
    kind = "loki"

    def __init__(self, base_url: str, *, tenant: str | None = None) -> None:
        super().__init__(base_url)
        self.tenant = tenant

    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> LokiSource:
        return cls(config["LOKI_URL"], tenant=config["LOKI_TENANT"])

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        if self.tenant:
            headers["X-Scope-OrgID"] = self.tenant
        return headers

    def check(self) -> None:
        self.labels()

    def labels(self) -> list[str]:
        return list(self.data("/loki/api/v1/labels") or [])

    def label_values(self, label: str) -> list[str]:
        return list(self.data(f"/loki/api/v1/label/{label}/values") or [])

    def inventory(self, *, now: datetime) -> SourceInventory:
        """Services: the values of the service labels Loki has."""
        known = set(self.labels())
        return SourceInventory(
            services={
                value
                for label in settings.DIAGNOSIS["SERVICE_LABELS"]
                if label in known
                for value in self.label_values(label)
            }
        )

    def service_label(self, known: set[str]) -> str:
        label = next((name for name in settings.DIAGNOSIS["SERVICE_LABELS"] if name in known), None)
        if label is None:
            raise self.error(
                f"Loki 中没有可用作服务名的标签（DIAGNOSIS_SERVICE_LABELS={','.join(settings.DIAGNOSIS['SERVICE_LABELS'])}）"
            )
        return label

    def logql(self, *, query: str, service: str | None) -> list[str]:
        """The LogQL queries of a search: one, or for errors only, one per way a level is kept."""
        known = set(self.labels())
        label = self.service_label(known)
        matcher = f'{label}="{quoted(service)}"' if service else f'{label}=~".+"'
        if errors_only(query, service=service):
            level_label = next((name for name in LEVEL_LABELS if name in known), None)
            unlabelled = f"{{{matcher}}} |~ `{ERROR_IN_LINE}`"
            if level_label is None:
                return [unlabelled]
            # Streams with a level label by their label; the others by the level their lines state.
            return [
                f'{{{matcher}, {level_label}=~"{ERROR_LEVEL_VALUES}"}}',
                f'{{{matcher}, {level_label}=""}} |~ `{ERROR_IN_LINE}`',
            ]
        terms = search_terms(query, service=service)
        if not terms:
            return [f"{{{matcher}}}"]
        return [f"{{{matcher}}} |~ `{logql_words(terms).replace('`', '')}`"]

    def query_logs(self, *, query: str, service: str | None, topic: str | None, now: datetime) -> list[dict]:
        window = timedelta(minutes=settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"])
        entries = []
        for logql in self.logql(query=query, service=service):
            entries += self.entries(logql, start=now - window, end=now, limit=MAX_LINES)
        entries.sort(key=lambda entry: -entry[0])
        records = [log_record(ns, line, labels, topic=topic) for ns, line, labels in entries]
        kept = line_rule(query, service=service)
        return [record for record in records if kept(record)][:MAX_LINES]

    def entries(
        self, logql: str, *, start: datetime, end: datetime, limit: int
    ) -> list[tuple[int, str, dict]]:
        """(ns, line, stream labels) of a log query over [start, end), newest first."""
        data = self.data(
            "/loki/api/v1/query_range",
            {
                "query": logql,
                "start": str(int(start.timestamp() * 1e9)),
                "end": str(int(end.timestamp() * 1e9)),
                "limit": limit,
                "direction": "backward",
            },
        )
        return [
            (int(timestamp), line, stream.get("stream") or {})
            for stream in (data or {}).get("result") or []
            for timestamp, line in stream.get("values") or []
        ]

    def query_logql(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]:
        """`{result_type, series}` of a metric query from `minutes` back to `now`, a point a minute
        ending on `now`; the series bounded as they are parsed (`total_series` when cut)."""
        kept = SeriesKept(OutputBounds.configured())
        data = self.data(
            "/loki/api/v1/query_range",
            {
                "query": query,
                "start": str(int((now - minutes * SERIES_STEP).timestamp() * 1e9)),
                "end": str(int(now.timestamp() * 1e9)),
                "step": f"{int(SERIES_STEP.total_seconds())}s",
                "limit": MAX_SERIES,
            },
            object_hook=kept,
        )
        answer = {
            "result_type": (data or {}).get("resultType", ""),
            "series": [record for record in (data or {}).get("result") or [] if record is not None],
        }
        if kept.total > len(answer["series"]):
            answer["total_series"] = kept.total
        return answer

    def log_patterns(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]:
        """`{result_type, series}` of the patterns Loki's pattern ingester mined from the selector's
        lines, from `minutes` back to `now`, a point a minute: the most frequent MAX_SERIES patterns
        (`total_series` when cut), each pattern's text bounded."""
        data = self.data(
            "/loki/api/v1/patterns",
            {
                "query": query,
                "start": str(int((now - minutes * SERIES_STEP).timestamp() * 1e9)),
                "end": str(int(now.timestamp() * 1e9)),
                "step": f"{int(SERIES_STEP.total_seconds())}s",
            },
        )
        return patterns_series(data if isinstance(data, list) else [], labels=selector_labels(query))

    def vector(self, logql: str, *, now: datetime) -> list[tuple[dict, str]]:
        """(labels, value) of an instant metric query at `now`."""
        data = self.data(
            "/loki/api/v1/query",
            {"query": logql, "time": str(int(now.timestamp() * 1e9)), "limit": MAX_SERIES},
        )
        return [
            (series.get("metric") or {}, str(series["value"][1]))
            for series in (data or {}).get("result") or []
        ]

    def count_logs(self, *, request: CountRequest, now: datetime) -> LogCounts:
        known = set(self.labels())
        selector = stream_selector(self.service_label(known), request.service)
        if request.measure == "class":
            sampled = self.logql(query="error", service=request.service or None)
        else:
            sampled = [selector]
        start = now - timedelta(minutes=request.minutes)
        entries = sorted(
            (
                entry
                for logql in sampled
                for entry in self.entries(logql, start=start, end=now, limit=SAMPLE_LINES)
            ),
            key=lambda entry: -entry[0],
        )[:SAMPLE_LINES]
        by_recipe: dict[Recipe, list[Line]] = {}
        rest = []
        for _, text, labels in entries:
            line = Line(message=text, level=level_of(text, labels))
            if request.measure == "class" and not is_error_level(line.level):
                continue
            # A parsed key named like one of the line's stream labels is extracted as `<key>_extracted`.
            recipe = recipe_of(line.fields, request.measure, stream_labels=labels.keys())
            (by_recipe.setdefault(recipe, []) if recipe else rest).append(line)
        queries: list[str] = []
        parts = [self._counted(recipe, selector, request, now=now, queries=queries) for recipe in by_recipe]
        # Every line of the window fits the lines read: counted in code, they are the whole window.
        over = WINDOW if len(entries) < SAMPLE_LINES else sample_of(len(entries))
        parts.append(counted_in_code(rest, request, counted_over=over))
        return LogCounts(records=counts_merged(parts, request), queries=tuple(queries))

    def _counted(
        self, recipe: Recipe, selector: str, request: CountRequest, *, now: datetime, queries: list[str]
    ) -> list[dict]:
        """One format's counts over the whole window, by LogQL; `queries` gains each query sent."""

        def sent(logql: str) -> list[tuple[dict, str]]:
            queries.append(logql)
            return self.vector(logql, now=now)

        if request.measure == "slow":
            counted = slow_count_query(selector, recipe, request)
            count = sum(int(Decimal(value)) for _, value in sent(counted))
            if not count:
                return []
            slowest_logql = slowest_query(selector, recipe, request)
            slowest = max((value for _, value in sent(slowest_logql)), key=Decimal)
            line_logql = slowest_line_query(selector, recipe, slowest)
            queries.append(line_logql)
            found = self.entries(line_logql, start=now - timedelta(minutes=request.minutes), end=now, limit=1)
            return [
                request.record(
                    group={},
                    count=count,
                    slowest_ms=exact(slowest_ms(recipe, slowest)),
                    line=found[0][1] if found else "",
                    query=f"{counted}；{slowest_logql}",
                    counted_over=WINDOW,
                )
            ]
        total_logql = total_query(selector, recipe, request)
        total = sum(int(Decimal(value)) for _, value in sent(total_logql))
        if not total:
            return []
        grouped_logql = grouped_query(selector, recipe, request)
        groups = [
            request.record(
                group=group_of(recipe, request, metric),
                count=int(Decimal(value)),
                query=grouped_logql,
                counted_over=WINDOW,
            )
            for metric, value in sent(grouped_logql)
        ]
        return [request.record(group={}, count=total, query=total_logql, counted_over=WINDOW), *groups]


def patterns_series(patterns: list[dict], *, labels: dict[str, str]) -> dict[str, Any]:
    """Loki's patterns (`[{pattern, samples: [[unix_s, count], …]}]`) as series a minute each: a
    minute in which any pattern was seen is a 0 for the others (the streams wrote lines, none of
    theirs); a minute in which none was is no point (nothing was written: no word on any pattern)."""
    minute = int(SERIES_STEP.total_seconds())
    counted: list[tuple[str, dict[int, int]]] = []
    for entry in patterns:
        text = str(entry.get("pattern") or "")[:MAX_PATTERN_CHARS] if isinstance(entry, dict) else ""
        per_minute: dict[int, int] = {}
        for sample in entry.get("samples") or [] if text else []:
            try:
                at, count = int(float(sample[0])), int(float(sample[1]))
            except (TypeError, ValueError, IndexError):
                continue
            per_minute[at - at % minute] = per_minute.get(at - at % minute, 0) + count
        if per_minute:
            counted.append((text, per_minute))
    minutes = sorted({at for _, per_minute in counted for at in per_minute})
    counted.sort(key=lambda pattern: -sum(pattern[1].values()))
    answer: dict[str, Any] = {
        "result_type": "matrix",
        "series": [
            {
                "metric": {**labels, "pattern": text},
                "values": [[at, str(per_minute.get(at, 0))] for at in minutes],
            }
            for text, per_minute in counted[:MAX_SERIES]
        ],
    }
    if len(counted) > MAX_SERIES:
        answer["total_series"] = len(counted)
    return answer


def selector_labels(query: str) -> dict[str, str]:
    """The labels a stream selector's equality matchers name (`{service="a"}` → `{service: a}`)."""
    return {
        name: value.replace('\\"', '"').replace("\\\\", "\\")
        for name, value in EQUALITY_MATCHER.findall(query)
    }


def errors_only(query: str, *, service: str | None) -> bool:
    """A search for errors and nothing else (`error`, `报错`): answered by level, not by words."""
    groups = {group for group, _ in query_terms(query.lower())}
    return groups == {"error"} and not _literal_words(query, service=service)


def line_rule(query: str, *, service: str | None) -> Callable[[dict], bool]:
    """Which records the search keeps: the LogQL's rule again in code, exactly (RE2 cannot say
    "not inside another word")."""
    if errors_only(query, service=service):
        return lambda record: is_error_level(record["level"])
    terms = search_terms(query, service=service)
    return lambda record: not terms or any(has_word(record["message"], term) for term in terms)


def search_terms(query: str, *, service: str | None) -> list[str]:
    """The terms of every topic the query names, then its other words."""
    found = query_terms(query.lower())
    terms = [term for group, _ in found for term in group_terms(group)]
    # As written: a term's CamelCase humps are its words (`OOMKilled` is oom + killed).
    unique: dict[str, str] = {}
    for term in [*terms, *_literal_words(query, service=service)]:
        unique.setdefault(term.lower(), term)
    return list(unique.values())


def _literal_words(query: str, *, service: str | None) -> list[str]:
    """The query's words that are no topic term nor the service, searched as they are."""
    lowered = query.lower()
    for _, (start, end) in query_terms(lowered):
        lowered = lowered[:start] + " " * (end - start) + lowered[end:]
    return [word for word in LITERAL_WORD.findall(lowered) if word != (service or "").lower()]


def log_record(ns: int, line: str, labels: dict[str, str], *, topic: str | None) -> dict:
    return {
        "timestamp": local_text(datetime.fromtimestamp(ns / 1e9).astimezone()),
        "level": level_of(line, labels),
        "service": service_of(labels),
        "instance": next((labels[name] for name in INSTANCE_LABELS if labels.get(name)), ""),
        "topic": topic or "",
        "message": line,
        "metrics": {},
        "labels": labels,
    }
