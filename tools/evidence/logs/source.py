"""What a log source answers (Loki, the demo world, a fixture)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class LogSource(Source, Protocol):
    """`query_logs`: every matching line, newest first (the tool applies its `limit`)."""

    def query_logs(
        self, *, query: str, service: str | None, topic: str | None, now: datetime
    ) -> list[dict]: ...
