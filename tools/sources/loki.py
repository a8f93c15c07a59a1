"""Loki HTTP API: LogQL over the look-back window, newest first, with the tenant header (contracts §11).

The query is built from the service (its label), the terms of the topics the question is about and
its other words: `{service="billing"} |~ "(?i)(oom|out of memory|…)"`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from tools.clock import local_text
from tools.inventory import SourceInventory
from tools.matching import group_terms, query_terms
from tools.records import service_of
from tools.sources.http import HttpSource

# The most lines one call asks for: the tool's own `limit` maximum.
MAX_LINES = 100
LEVEL_LABELS = ("level", "detected_level", "severity")
INSTANCE_LABELS = ("instance", "pod", "host", "hostname")
LEVEL_IN_LINE = re.compile(r"(?<![A-Za-z])(FATAL|CRITICAL|ERROR|WARN(?:ING)?|INFO|DEBUG)(?![A-Za-z])", re.I)
# Question words searched literally when they are not a known topic term (`idx_user_id`, `退款`).
LITERAL_WORD = re.compile(r"[a-z0-9_.:/\-]{4,}|[\u4e00-\u9fff]{2,}")


class LokiSource(HttpSource):
    kind = "loki"

    def __init__(self, base_url: str, *, tenant: str | None = None) -> None:
        super().__init__(base_url)
        self.tenant = tenant

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        if self.tenant:
            headers["X-Scope-OrgID"] = self.tenant
        return headers

    def data(self, path: str, params: dict[str, Any] | None = None) -> Any:
        payload = self.get_json(path, params)
        if not isinstance(payload, dict) or payload.get("status") != "success":
            raise self.error(f"{path} 返回了非 success 的响应（{str(payload)[:200]}）")
        return payload.get("data")

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

    def logql(self, *, query: str, service: str | None) -> str:
        known = set(self.labels())
        label = next((name for name in settings.DIAGNOSIS["SERVICE_LABELS"] if name in known), None)
        if label is None:
            raise self.error(
                f"Loki 中没有可用作服务名的标签（DIAGNOSIS_SERVICE_LABELS={','.join(settings.DIAGNOSIS['SERVICE_LABELS'])}）"
            )
        selector = f'{{{label}="{_quoted(service)}"}}' if service else f'{{{label}=~".+"}}'
        terms = search_terms(query, service=service)
        if not terms:
            return selector
        pattern = "(?i)(" + "|".join(re.escape(term) for term in terms) + ")"
        return f"{selector} |~ `{pattern.replace('`', '')}`"

    def query_logs(self, *, query: str, service: str | None, topic: str | None, now: datetime) -> list[dict]:
        window = timedelta(minutes=settings.DIAGNOSIS["LOGS_WINDOW_MINUTES"])
        data = self.data(
            "/loki/api/v1/query_range",
            {
                "query": self.logql(query=query, service=service),
                "start": str(int((now - window).timestamp() * 1e9)),
                "end": str(int(now.timestamp() * 1e9)),
                "limit": MAX_LINES,
                "direction": "backward",
            },
        )
        entries = [
            (int(timestamp), line, stream.get("stream") or {})
            for stream in (data or {}).get("result") or []
            for timestamp, line in stream.get("values") or []
        ]
        entries.sort(key=lambda entry: -entry[0])
        return [log_record(ns, line, labels, topic=topic) for ns, line, labels in entries[:MAX_LINES]]


def search_terms(query: str, *, service: str | None) -> list[str]:
    """The terms of every topic the query names, then its other words."""
    lowered = query.lower()
    terms: list[str] = []
    for group, (start, end) in query_terms(lowered):
        terms += group_terms(group)
        lowered = lowered[:start] + " " * (end - start) + lowered[end:]
    words = [word for word in LITERAL_WORD.findall(lowered) if word != (service or "").lower()]
    return list(dict.fromkeys(term.lower() for term in [*terms, *words]))


def log_record(ns: int, line: str, labels: dict[str, str], *, topic: str | None) -> dict:
    level = next((labels[name] for name in LEVEL_LABELS if labels.get(name)), "")
    if not level and (found := LEVEL_IN_LINE.search(line)):
        level = found[1]
    level = level.upper().replace("WARNING", "WARN")
    return {
        "timestamp": local_text(datetime.fromtimestamp(ns / 1e9).astimezone()),
        "level": level,
        "service": service_of(labels),
        "instance": next((labels[name] for name in INSTANCE_LABELS if labels.get(name)), ""),
        "topic": topic or "",
        "message": line,
        "metrics": {},
        "labels": labels,
    }


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
