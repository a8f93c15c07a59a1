"""What a source answers: one protocol per kind of evidence.

A source class subclasses the protocols of the kinds it serves (Prometheus: alerts, series and
targets) and gets the defaults of `Source`; a class named by dotted path in settings is checked
against its kind's protocol when it is loaded (`tools.sources.plugins`). Records carry the output
fields the tools declare; no match is an empty list, never a placeholder. A source that fails raises;
the recorder turns that into a failed invocation naming the source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.inventory import SourceInventory
from tools.retrieval import KnowledgeBlock


@runtime_checkable
class Source(Protocol):
    """What every source can say besides its evidence; the defaults say nothing."""

    def provenance(self) -> tuple[str, str]:
        """(kind, location) recorded on every call it answers; by default its class's dotted path."""
        return f"{type(self).__module__}.{type(self).__qualname__}", ""

    def check(self) -> None:
        """Raise when it cannot answer (`manage.py sources`)."""

    def skipped(self) -> int:
        """How many of its documents it leaves out (runbook files it will not read)."""
        return 0

    def inventory(self, *, now: datetime) -> SourceInventory:
        """What it knows now: services, alert names, runbooks, metrics."""
        return SourceInventory()


@runtime_checkable
class AlertSource(Source, Protocol):
    """`query_alerts`: the alerts known now, filtered by service and alert name."""

    def query_alerts(self, *, service: str | None, alert_name: str | None, now: datetime) -> list[dict]: ...


@runtime_checkable
class SeriesSource(Source, Protocol):
    """`query_promql`: `{result_type, series}` of a PromQL query, instant (`minutes` 0) or a range;
    with `total_series` when the source kept only the first of them (`tools.bounds.SeriesKept`)."""

    def query_promql(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]: ...

    def retention_minutes(self) -> int | None:
        """How far back it keeps samples; None when it cannot say."""
        return None


@runtime_checkable
class LabelledSeriesSource(SeriesSource, Protocol):
    """A series source that also tells its series' label names and values; one that
    cannot has no carrier, and PromQL templates are taken as written."""

    def label_names(self, *, match: str) -> list[str]: ...

    def label_values(self, label: str, *, match: str | None = None) -> list[str]: ...


@runtime_checkable
class TargetSource(Source, Protocol):
    """`query_targets`: every scrape target with its job, instance, health and last error."""

    def targets(self) -> list[dict]: ...


@runtime_checkable
class LogSource(Source, Protocol):
    """`query_logs`: every matching line, newest first (the tool applies its `limit`)."""

    def query_logs(
        self, *, query: str, service: str | None, topic: str | None, now: datetime
    ) -> list[dict]: ...


@runtime_checkable
class KnowledgeSource(Source, Protocol):
    """`lookup_knowledge`: every runbook and past-case block it knows; the tool ranks them."""

    def knowledge_blocks(self) -> list[KnowledgeBlock]: ...


# The kinds by the names settings use (`DIAGNOSIS["SOURCE_CLASSES"]`).
SOURCE_KINDS: dict[str, type[Source]] = {
    "alerts": AlertSource,
    "series": SeriesSource,
    "targets": TargetSource,
    "logs": LogSource,
    "knowledge": KnowledgeSource,
}


def kind_name(kind: type[Source]) -> str:
    return next(name for name, protocol in SOURCE_KINDS.items() if protocol is kind)
