"""A source serving an evaluation case's own tool data, on top of the demo world or instead of it.

Named per kind like any source class (`DIAGNOSIS["SOURCE_CLASSES"]["logs"] =
"tools.sources.fixture.FixtureSource"`); what it serves is read from
`DIAGNOSIS["FIXTURE_TOOL_DATA"][tool]` (plain JSON, validated by `diagnosis.evaluation.fixtures`):

- `mode`: `merge` (the demo world, for lookup_knowledge its runbooks and past cases, plus these
  records) or `replace` (these records only: nothing from the demo world or the case library);
- `records`: alerts / logs in the demo world's stored shape (times as minutes before now), matched
  exactly as the demo world matches its own; knowledge blocks for lookup_knowledge;
- `responses`: recorded calls `[{arguments, records | error}]` answered exactly as recorded
  (exported sessions); a call nothing was recorded for falls back to `records` / `mode`;
- `error`: every call of the tool fails with this message.

The metric catalog follows the logs' data: the samples its log records carry (`metrics`), beside the
demo world's in `merge` mode.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from tools.evidence.alerts.source import AlertSource
from tools.evidence.knowledge.source import KnowledgeSource
from tools.evidence.logs.source import LogSource
from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS
from tools.inventory import SourceInventory
from tools.knowledge_block import KnowledgeBlock
from tools.logcounts import CountRequest, LogCounts
from tools.metric_catalog import MetricCatalog, catalog_from_records, catalogs_united
from tools.sources.demo import (
    SAMPLED_ON,
    DemoWorldSource,
    alert_rendered,
    filter_matches,
    lines_counted,
    log_matches,
    log_record,
    log_rendered,
    world_logs,
)

MERGE, REPLACE = "merge", "replace"
# Arguments the source sees for each tool; others (limit, top_k) are applied by the tool itself.
CALL_KEYS = {ALERTS.tool: ("service", "alert_name"), LOGS.tool: ("query", "service", "topic")}


class FixtureToolError(RuntimeError):
    """The case says this tool is down."""


class FixtureSource(AlertSource, LogSource, KnowledgeSource, MetricCatalogSource):
    def provenance(self) -> tuple[str, str]:
        """An evaluation case's data; `merge` mode also serves the demo world."""
        return "fixture", "evaluation case"

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]:
        data = _data(ALERTS.tool)
        recorded = _recorded(data, ALERTS.tool, service=service, alert_name=alert_name)
        if recorded is not None:
            return recorded
        own = [
            alert_rendered(alert, now)
            for alert in data.get("records", [])
            if filter_matches(service, alert["service"]) and filter_matches(alert_name, alert["alert_name"])
        ]
        if data.get("mode", MERGE) == REPLACE:
            return own
        return [*DemoWorldSource().query_alerts(service=service, alert_name=alert_name, now=now), *own]

    def query_logs(self, *, query: str, service: str | None, topic: str | None, now: datetime) -> list[dict]:
        data = _data(LOGS.tool)
        recorded = _recorded(data, LOGS.tool, query=query, service=service, topic=topic)
        if recorded is not None:
            return recorded
        logs = [
            log_rendered(fields, now)
            for fields in data.get("records", [])
            if filter_matches(service, fields["service"])
            and filter_matches(topic, fields["topic"])
            and log_matches(log_record(fields), query)
        ]
        if data.get("mode", MERGE) == MERGE:
            logs = [*DemoWorldSource().query_logs(query=query, service=service, topic=topic, now=now), *logs]
        # Newest first, as the demo world answers; timestamps share one shape and zone, so they sort as
        # text, and the sort is stable for equal times.
        return sorted(logs, key=lambda log: log["timestamp"], reverse=True)

    def count_logs(self, *, request: CountRequest, now: datetime) -> LogCounts:
        """Counted over every line the case serves (its records, with the demo world's in merge mode)."""
        data = _data(LOGS.tool)
        records = list(data.get("records", []))
        if data.get("mode", MERGE) == MERGE:
            records += world_logs()
        return LogCounts(records=lines_counted(records, request))

    def knowledge_blocks(self) -> list[KnowledgeBlock]:
        data = _data(KNOWLEDGE.tool)
        own = [
            KnowledgeBlock(
                block_id=block["block_id"],
                source_document=block["source_document"],
                title=block["title"],
                content=block["content"],
                exact_terms=tuple(block.get("exact_terms", ())),
                section=block.get("section", ""),
            )
            for block in data.get("records", [])
        ]
        if data.get("mode", MERGE) == MERGE:
            return [*DemoWorldSource().knowledge_blocks(), *own]
        return own

    def metric_catalog(self, *, now: datetime) -> MetricCatalog:
        """The samples the case's log records carry, and the demo world's unless the logs replace it."""
        data = settings.DIAGNOSIS.get("FIXTURE_TOOL_DATA", {}).get(LOGS.tool, {})
        records = [
            *data.get("records", []),
            *(record for response in data.get("responses", []) for record in response.get("records", [])),
        ]
        own = catalog_from_records(records, labels=SAMPLED_ON)
        if data.get("mode", MERGE) == REPLACE:
            return own
        return catalogs_united(own, DemoWorldSource().metric_catalog(now=now))

    def inventory(self, *, now: datetime) -> SourceInventory:
        """What the case's own records name, plus the demo world's where a tool merges with it."""
        tool_data = settings.DIAGNOSIS.get("FIXTURE_TOOL_DATA", {})
        demo = DemoWorldSource().inventory(now=now)
        inventory = SourceInventory()
        for tool_name, data in tool_data.items():
            records = [
                *data.get("records", []),
                *(record for response in data.get("responses", []) for record in response.get("records", [])),
            ]
            if KNOWLEDGE.owns(tool_name):
                inventory.runbooks |= {block["source_document"] for block in records}
            else:
                inventory.services |= {record["service"] for record in records if record.get("service")}
                inventory.alerts |= {record["alert_name"] for record in records if record.get("alert_name")}
            if data.get("mode", MERGE) == MERGE:
                inventory = inventory.united(demo)
        return inventory


def _data(tool_name: str) -> dict[str, Any]:
    data = settings.DIAGNOSIS.get("FIXTURE_TOOL_DATA", {}).get(tool_name, {})
    if data.get("error"):
        raise FixtureToolError(data["error"])
    return data


def _recorded(data: dict, tool_name: str, **call: str | None) -> list[dict] | None:
    for response in data.get("responses", []):
        arguments = response.get("arguments", {})
        if all((arguments.get(key) or None) == (call[key] or None) for key in CALL_KEYS[tool_name]):
            if response.get("error"):
                raise FixtureToolError(response["error"])
            return list(response.get("records", []))
    return None
