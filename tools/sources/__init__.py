"""Evidence sources, chosen per kind by environment: a team points the product at
its own stack with `DIAGNOSIS_PROMETHEUS_URL`, `DIAGNOSIS_ALERTMANAGER_URL`, `DIAGNOSIS_LOKI_URL`,
`DIAGNOSIS_TEMPO_URL` and `DIAGNOSIS_RUNBOOKS_DIR`, no Python needed.

`SOURCES` is the one registry: each variable names the source class it configures. For each kind of
evidence (`tools.evidence.<kind>.source`) the first configured class serving it answers. With no source
of the team's configured at all, the demo world answers where it serves the kind (PromQL and scrape
targets need Prometheus); with any one configured, a kind none serves has no source, and the answer
says so (`EvidenceKind.unconfigured`): never the demo world behind the team's data. A class named for
the kind in `DIAGNOSIS["SOURCE_CLASSES"]` wins over both (`tools.sources.plugins`) and decides for its
kind only.

There is no fallback: a configured source that is down never gives demo-world evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings

from tools.evidence.metric_catalog.source import MetricCatalogSource
from tools.evidence.registry import SOURCE_KINDS, kind_name
from tools.evidence.source import Source
from tools.inventory import SourceInventory
from tools.metric_catalog import MetricCatalog
from tools.source_names import DEMO as DEMO
from tools.source_names import DEMO_LABEL as DEMO_LABEL
from tools.sources.alertmanager import AlertmanagerSource
from tools.sources.demo import DemoWorldSource
from tools.sources.loki import LokiSource
from tools.sources.plugins import source_class_load
from tools.sources.prometheus import PrometheusSource
from tools.sources.runbooks import RunbooksSource
from tools.sources.tempo import TempoSource

logger = logging.getLogger(__name__)


class ConfiguredSource(Source, Protocol):
    @classmethod
    def configured(cls, config: Mapping[str, Any]) -> Source:
        """The source as the settings (`settings.DIAGNOSIS`) configure it."""
        ...


# The environment variable that configures each source, in order of preference per kind:
# Alertmanager's alert list before Prometheus's alerting rules.
SOURCES: dict[str, type[ConfiguredSource]] = {
    "DIAGNOSIS_ALERTMANAGER_URL": AlertmanagerSource,
    "DIAGNOSIS_PROMETHEUS_URL": PrometheusSource,
    "DIAGNOSIS_LOKI_URL": LokiSource,
    "DIAGNOSIS_TEMPO_URL": TempoSource,
    "DIAGNOSIS_RUNBOOKS_DIR": RunbooksSource,
}


def configured_source(kind: type[Source]) -> Source | None:
    """The first source the environment configures for the kind, or None."""
    config = settings.DIAGNOSIS
    for variable, source_class in SOURCES.items():
        # `settings.DIAGNOSIS` holds each variable's value under its name without the prefix.
        if config[variable.partition("_")[2]] and issubclass(source_class, kind):
            return source_class.configured(config)
    return None


def source_for(kind: type[Source]) -> Source | None:
    """The source that answers the kind now; None when nothing can (PromQL without Prometheus)."""
    path = settings.DIAGNOSIS["SOURCE_CLASSES"].get(kind_name(kind))
    if path:
        return source_class_load(path, kind=kind)()
    source = configured_source(kind)
    if source is None and issubclass(DemoWorldSource, kind) and not team_sources_configured():
        return DemoWorldSource()
    return source


def team_sources_configured() -> bool:
    """Whether the environment configures any of the team's sources (a variable of `SOURCES`)."""
    config = settings.DIAGNOSIS
    return any(config[variable.partition("_")[2]] for variable in SOURCES)


def settings_needed(kind: type[Source]) -> str:
    """The variables that would configure a source for the kind: `DIAGNOSIS_PROMETHEUS_URL`."""
    return " 或 ".join(
        variable for variable, source_class in SOURCES.items() if issubclass(source_class, kind)
    )


def is_demo(source: Source | None) -> bool:
    return source is not None and source.provenance()[0] == DEMO


def sources_inventory(*, now: datetime) -> SourceInventory:
    """What the sources the tools would use know now, united; each distinct source asked once.

    A source that fails is left out with a logged warning (its tool call will fail and say so)."""
    chosen: dict[tuple[str, str], Source] = {}
    for kind in SOURCE_KINDS.values():
        source = source_for(kind)
        if source is not None:
            chosen.setdefault(source.provenance(), source)
    inventory = SourceInventory()
    for (kind_of_source, location), source in chosen.items():
        try:
            inventory = inventory.united(source.inventory(now=now))
        except Exception:  # a source being down must not stop the session
            logger.warning(
                "inventory of source %s %s failed; left out", kind_of_source, location, exc_info=True
            )
    return inventory


def sources_catalog(*, now: datetime) -> MetricCatalog:
    """The metric catalog of the source that answers for it now (Prometheus, else the demo world's
    samples), read with the inventory; empty when none answers or it fails (logged): a question is
    then read without it, as before there was one, and never said to name nothing."""
    source = source_for(MetricCatalogSource)
    if not isinstance(source, MetricCatalogSource):
        return MetricCatalog()
    try:
        return source.metric_catalog(now=now)
    except Exception:  # a source being down must not stop the session
        logger.warning("metric metadata of source %s %s failed; left out", *source.provenance(), exc_info=True)
        return MetricCatalog()
