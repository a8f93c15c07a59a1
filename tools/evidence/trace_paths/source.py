"""What a trace paths source answers (Tempo): for a bounded sample of the traces of the last minutes
(of the baseline before the incident, its last `incident_minutes`, and of the incident alike), which
step came right after each step of a trace: a span's start, or a line written in a span (a span event)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from tools.evidence.source import Source


@runtime_checkable
class TracePathsSource(Source, Protocol):
    """`trace_paths`: `{steps, traces_read, traces_found}`, one entry per (service, step)
    (`TracePathsRecord`'s fields), the steps in the most traces first."""

    def trace_paths(self, *, minutes: int, incident_minutes: int, now: datetime) -> dict[str, Any]: ...
