"""What a source answers: the base every kind's protocol (`tools.evidence.<kind>.source`) extends.

A source class subclasses the protocols of the kinds it serves (Prometheus: alerts, series and
targets) and gets the defaults of `Source`; a class named by dotted path in settings is checked
against its kind's protocol when it is loaded (`tools.sources.plugins`), under its kind's package name
(`alerts`, `series`…). Records carry the output fields the tools declare; no match is an empty list, never a placeholder. A source that fails raises;
the recorder turns that into a failed invocation naming the source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from tools.inventory import SourceInventory


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
