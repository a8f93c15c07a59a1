"""Loki HTTP API: LogQL over the look-back window, newest first, with the tenant header.

The query is built from the service (its label), the terms of the topics the question is about and
its other words, each as a whole word: `{service="billing"} |~ "…(?i:oom)…"`. A query
for errors only filters by level: in the stream selector where a level label exists, by the level
parsed from the line otherwise. Code then keeps only the lines the same word and level rules accept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from tools.clock import local_text
from tools.evidence.logs.source import LogSource
from tools.inventory import SourceInventory
from tools.loglines import (
    ERROR_IN_LINE,
    ERROR_LEVEL_VALUES,
    LEVEL_LABELS,
    has_word,
    is_error_level,
    level_of,
    logql_words,
)
from tools.matching import group_terms, query_terms
from tools.promql import quoted
from tools.records import service_of
from tools.sources.http import HttpSource

# The most lines one call asks for: the tool's own `limit` maximum.
MAX_LINES = 100
INSTANCE_LABELS = ("instance", "pod", "host", "hostname")
# Question words searched literally when they are not a known topic term (`idx_user_id`, `退款`).
LITERAL_WORD = re.compile(r"[a-z0-9_.:/\-]{4,}|[\u4e00-\u9fff]{2,}")


class LokiSource(HttpSource, LogSource):
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
            data = self.data(
                "/loki/api/v1/query_range",
                {
                    "query": logql,
                    "start": str(int((now - window).timestamp() * 1e9)),
                    "end": str(int(now.timestamp() * 1e9)),
                    "limit": MAX_LINES,
                    "direction": "backward",
                },
            )
            entries += [
                (int(timestamp), line, stream.get("stream") or {})
                for stream in (data or {}).get("result") or []
                for timestamp, line in stream.get("values") or []
            ]
        entries.sort(key=lambda entry: -entry[0])
        records = [log_record(ns, line, labels, topic=topic) for ns, line, labels in entries]
        kept = line_rule(query, service=service)
        return [record for record in records if kept(record)][:MAX_LINES]


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
