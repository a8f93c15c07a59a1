"""What a log patterns source answers (Loki's pattern ingester): the patterns of a stream selector's
lines over the last minutes, each counted per minute."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class LogPatternsSource(Source, Protocol):
    """`log_patterns`: `{result_type: "matrix", series}`, one series a pattern
    (`{metric: {pattern, …the selector's labels}, values: [[ts, "count"], …]}`), a point a minute in
    which the selected streams wrote any line (0 where they wrote others, none where they wrote none)."""

    def log_patterns(self, *, query: str, minutes: int, now: datetime) -> dict[str, Any]: ...
