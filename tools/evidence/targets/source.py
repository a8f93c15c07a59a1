"""What a scrape-target source answers (Prometheus)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class TargetSource(Source, Protocol):
    """`query_targets`: every scrape target with its job, instance, health and last error."""

    def targets(self) -> list[dict]: ...
