"""The demo world (DEMO_WORLD.md): a small production system with live incidents, from data files,
and its knowledge: the runbooks in `data/demo_world/runbooks` and the case library's past cases.

Times are stored as minutes before "now" and rendered against the tools' clock, so the world
looks live and tests can pin it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import yaml

from tools.clock import local_text
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.alerts.source import AlertSource
from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.logs.source import LogSource
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.inventory import SourceInventory
from tools.knowledge_block import KnowledgeBlock
from tools.logcounts import WINDOW, CountRequest, Line, LogCounts, counted_in_code
from tools.loglines import groups_of
from tools.matching import mentioned, query_groups
from tools.metric_catalog import MetricCatalog, catalog_from_records
from tools.records import alert_record
from tools.sources.plugins import knowledge_sources_blocks

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "demo_world"
# The fields of a stored log record that say where its `metrics` were sampled: the catalog's labels.
SAMPLED_ON = ("service", "instance")
# Words of a query without any known keyword or service, matched literally (`idx_user_id`).
LITERAL_WORD = re.compile(r"[a-z0-9_.:/\-]{4,}|[\u4e00-\u9fff]{2,}")
# A hyphenated name (`foo-bar`, `node-07`): one the world's records never name is a service or host
# it does not know, and must narrow to nothing, not be ignored.
NAME_WORD = re.compile(r"(?<![a-z0-9-])[a-z0-9]+(?:-[a-z0-9]+)+(?![a-z0-9-])")


@dataclass(frozen=True)
class LogRecord:
    fields: dict
    # The searchable text with its case (CamelCase parts are words of their own).
    words: str

    @property
    def text(self) -> str:
        return self.words.lower()

    @property
    def groups(self) -> frozenset[str]:
        # Read with the vocabulary in use now: a reading kept with the record would keep the first world's.
        return frozenset(groups_of(self.words, vocabulary=current_vocabulary()))


def _read_json(name: str) -> list[dict]:
    return json.loads((DATA_DIR / name).read_text(encoding="utf-8"))


@cache
def _alerts() -> tuple[dict, ...]:
    return tuple(_read_json("alerts.json"))


@cache
def _logs() -> tuple[LogRecord, ...]:
    records = sorted(_read_json("logs.json"), key=lambda record: record["minutes_ago"])
    return tuple(log_record(record) for record in records)


def world_logs() -> list[dict]:
    """The world's log records in their stored shape."""
    return [record.fields for record in _logs()]


def log_record(fields: dict) -> LogRecord:
    """A record with its searchable text; the groups it is about are read from its words with their case."""
    words = " ".join(
        (fields["level"], fields["service"], fields["instance"], fields["topic"], fields["message"])
    )
    return LogRecord(fields=fields, words=words)


@cache
def _catalog() -> MetricCatalog:
    return catalog_from_records((record.fields for record in _logs()), labels=SAMPLED_ON)


@cache
def _known_names() -> frozenset[str]:
    """Services and instances a query may name: those the world's alerts and logs name."""
    return frozenset(
        name for record in _logs() for name in (record.fields["service"], record.fields["instance"])
    ) | {alert["service"] for alert in _alerts()}


@cache
def _runbook_blocks() -> tuple[KnowledgeBlock, ...]:
    blocks = []
    for path in sorted((DATA_DIR / "runbooks").glob("*.md")):
        _, front_matter, body = path.read_text(encoding="utf-8").split("---\n", 2)
        meta = yaml.safe_load(front_matter)
        sections = re.split(r"^## +(.+)$", body, flags=re.MULTILINE)[1:]
        for index, (heading, content) in enumerate(zip(sections[::2], sections[1::2], strict=True), start=1):
            blocks.append(
                KnowledgeBlock(
                    block_id=f"{path.stem}#{index}",
                    source_document=f"runbooks/{path.name}",
                    title=f"{meta['title']} · {heading.strip()}",
                    content=content.strip(),
                    exact_terms=tuple(str(term) for term in meta["terms"]),
                    section=heading.strip(),
                )
            )
    return tuple(blocks)


def filter_matches(wanted: str | None, value: str) -> bool:
    return not wanted or wanted.strip().lower() == value.lower()


def _unknown_names(query: str) -> set[str]:
    return {
        word
        for word in NAME_WORD.findall(query.lower())
        if word not in _known_names() and not any(word in record.text for record in _logs())
    }


def log_matches(record: LogRecord, query: str) -> bool:
    """By service and topic keywords with synonyms; a query naming neither is matched literally."""
    names = mentioned(_known_names(), query) | _unknown_names(query)
    if names and not names & {record.fields["service"], record.fields["instance"]}:
        return False
    groups = query_groups(query)
    if groups:
        return bool(groups & record.groups)
    return bool(names) or any(word in record.text for word in LITERAL_WORD.findall(query.lower()))


class DemoWorldSource(AlertSource, LogSource, KnowledgeSource, MetricCatalogSource):
    def provenance(self) -> tuple[str, str]:
        return "demo", "tools/data/demo_world"

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]:
        return [
            alert_rendered(alert, now)
            for alert in _alerts()
            if filter_matches(service, alert["service"]) and filter_matches(alert_name, alert["alert_name"])
        ]

    def query_logs(self, *, query: str, service: str | None, topic: str | None, now: datetime) -> list[dict]:
        return [
            log_rendered(record.fields, now)
            for record in _logs()
            if filter_matches(service, record.fields["service"])
            and filter_matches(topic, record.fields["topic"])
            and log_matches(record, query)
        ]

    def count_logs(self, *, request: CountRequest, now: datetime) -> LogCounts:
        """Counted over every line of the window: the world holds them all."""
        return LogCounts(records=lines_counted(world_logs(), request))

    def knowledge_blocks(self) -> list[KnowledgeBlock]:
        """The runbooks and the blocks of the configured knowledge sources (the case library's past cases)."""
        return [*_runbook_blocks(), *knowledge_sources_blocks()]

    def metric_catalog(self, *, now: datetime) -> MetricCatalog:
        """The samples its log records carry (`metrics`), each a gauge on the record's service and instance."""
        return _catalog()

    def inventory(self, *, now: datetime) -> SourceInventory:
        return SourceInventory(
            services={alert["service"] for alert in _alerts()} | {r.fields["service"] for r in _logs()},
            alerts={alert["alert_name"] for alert in _alerts()},
            runbooks={block.source_document for block in _runbook_blocks()},
        )


def lines_counted(records: list[dict], request: CountRequest) -> list[dict]:
    """Records in the world's stored shape (minutes before now) counted over the request's window,
    newest first."""
    within = sorted(
        (
            record
            for record in records
            if filter_matches(request.service, record["service"]) and record["minutes_ago"] <= request.minutes
        ),
        key=lambda record: record["minutes_ago"],
    )
    lines = [Line(message=record["message"], level=record["level"]) for record in within]
    return counted_in_code(lines, request, counted_over=WINDOW)


def alert_rendered(alert: dict, now: datetime) -> dict:
    return alert_record(
        alert_name=alert["alert_name"],
        service=alert["service"],
        state=alert["state"],
        severity=alert["severity"],
        description=alert["description"],
        started=now - timedelta(minutes=alert["started_minutes_ago"]),
        now=now,
        labels=alert["labels"],
        value=alert["value"],
        threshold=alert["threshold"],
    )


def log_rendered(record: dict, now: datetime) -> dict:
    return {
        "timestamp": local_text(now - timedelta(minutes=record["minutes_ago"])),
        "level": record["level"],
        "service": record["service"],
        "instance": record["instance"],
        "topic": record["topic"],
        "message": record["message"],
        "metrics": record["metrics"],
    }
