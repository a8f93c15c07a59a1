"""Evidence sources, chosen per tool by environment: a team points the product at
its own stack with `DIAGNOSIS_PROMETHEUS_URL`, `DIAGNOSIS_ALERTMANAGER_URL`, `DIAGNOSIS_LOKI_URL`
and `DIAGNOSIS_RUNBOOKS_DIR`; each tool uses the first configured source for it and, with none,
the demo world. A backend named explicitly in `DIAGNOSIS["TOOL_BACKENDS"]` (evaluation fixtures, a settings
override) wins over both.

A source answers the methods its tools call (see `tools.backends`) plus `query_promql` and
`targets` for Prometheus, and tells where its answers come from with `provenance() -> (kind, location)`.
A source that fails raises; the recorder turns that into a failed invocation naming the source.
There is no fallback: a configured source that is down never gives demo-world evidence.

A source may also say what it knows now, `inventory(*, now) -> SourceInventory`;
`sources_inventory` asks every source the tools would use, each once.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from tools.backends.demo import DemoWorldBackend
from tools.inventory import SourceInventory
from tools.sources.alertmanager import AlertmanagerSource
from tools.sources.loki import LokiSource
from tools.sources.prometheus import PrometheusSource
from tools.sources.runbooks import RunbooksSource

logger = logging.getLogger(__name__)

DEMO = "demo"
# The tools that read a source, and the method that tells whether a source serves the tool.
SOURCE_TOOLS = {
    "query_metrics": "query_alerts",
    "query_promql": "query_promql",
    "query_targets": "targets",
    "query_logs": "query_logs",
    "lookup_knowledge": "knowledge_blocks",
}


def _prometheus() -> PrometheusSource | None:
    url = settings.DIAGNOSIS["PROMETHEUS_URL"]
    return PrometheusSource(url) if url else None


def configured_source(tool_name: str) -> Any | None:
    """The first source configured for the tool, or None (then the demo world answers)."""
    config = settings.DIAGNOSIS
    if tool_name == "query_metrics":
        if config["ALERTMANAGER_URL"]:
            return AlertmanagerSource(config["ALERTMANAGER_URL"], prometheus=_prometheus())
        return _prometheus()
    if tool_name in ("query_promql", "query_targets"):
        return _prometheus()
    if tool_name == "query_logs" and config["LOKI_URL"]:
        return LokiSource(config["LOKI_URL"], tenant=config["LOKI_TENANT"])
    if tool_name == "lookup_knowledge" and config["RUNBOOKS_DIR"]:
        return RunbooksSource(config["RUNBOOKS_DIR"])
    return None


def source_for(tool_name: str) -> Any:
    explicit = settings.DIAGNOSIS["TOOL_BACKENDS"].get(tool_name)
    if explicit:
        return import_string(explicit)()
    return configured_source(tool_name) or DemoWorldBackend()


def provenance_of(source: Any) -> tuple[str, str]:
    """(kind, location) of a source; a team's own backend class is named by its dotted path."""
    if hasattr(source, "provenance"):
        return source.provenance()
    return f"{type(source).__module__}.{type(source).__qualname__}", ""


def is_demo(source: Any) -> bool:
    return provenance_of(source)[0] == DEMO


def sources_inventory(*, now: datetime) -> SourceInventory:
    """What the sources the tools would use know now, united; each distinct source asked once.

    A source that fails is left out with a logged warning (its tool call will fail and say so);
    one without `inventory` contributes nothing."""
    chosen: dict[tuple[str, str], Any] = {}
    for tool_name, method in SOURCE_TOOLS.items():
        source = source_for(tool_name)
        if hasattr(source, method):
            chosen.setdefault(provenance_of(source), source)
    inventory = SourceInventory()
    for (kind, location), source in chosen.items():
        if not hasattr(source, "inventory"):
            continue
        try:
            inventory = inventory.united(source.inventory(now=now))
        except Exception:  # a source being down must not stop the session
            logger.warning("inventory of source %s %s failed; left out", kind, location, exc_info=True)
    return inventory
