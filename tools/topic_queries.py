"""Topic → PromQL queries (`data/promql_topics.json`): what the rules engine asks Prometheus when a
question is about a topic of a service. Data, not code: a team adapts the file to its exporters."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TOPIC_QUERIES_FILE = Path(__file__).parent / "data" / "promql_topics.json"
SERVICE_PLACEHOLDER = "{service}"


@cache
def _table() -> dict[str, list[str]]:
    table = json.loads(TOPIC_QUERIES_FILE.read_text(encoding="utf-8"))
    return {topic: list(queries) for topic, queries in table.items() if not topic.startswith("_")}


def topic_queries(topic: str, *, service: str) -> list[str]:
    """The topic's queries for one service; a service name is quoted so it cannot change the query."""
    quoted = service.replace("\\", "\\\\").replace('"', '\\"')
    return [query.replace(SERVICE_PLACEHOLDER, quoted) for query in _table().get(topic, [])]
