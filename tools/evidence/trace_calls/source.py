"""What a trace calls source answers (Tempo): for a bounded sample of the traces of the last minutes
(of the baseline before the incident, its last `incident_minutes`, and of the incident alike), which
calls each operation's spans made, counted per minute."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class TraceCallsSource(Source, Protocol):
    """`trace_calls`: `{operations, traces_read, traces_found}`, one entry per (service, operation)
    (`TraceCallsRecord`'s fields), the operations with the most spans first."""

    def trace_calls(self, *, minutes: int, incident_minutes: int, now: datetime) -> dict[str, Any]: ...
