"""One step of the traces in a sample: in each window read (the baseline before the incident, the
incident), in how many traces it was taken, and which step came right after it in how many of those.
A step is a span's start (named by its operation) or a line written in a span (a span event, named by
its code place, `code.namespace#code.lineno`, or by its text with the numbers masked); the step after
one is named `<service> <step>`, the service it was taken in first.

A path that changed is a share that moved: of the traces that took a step, the share in which another
came next. The counts are what that share is computed from, by the investigation and again by the
gatekeeper (`share`).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import SAMPLE_CHARS, clip
from tools.evidence.trace_calls.record import SampleWindow


class NextStep(BaseModel):
    """A step that came right after, and in how many traces it did (each trace counted once)."""

    model_config = ConfigDict(extra="forbid")

    step: str
    traces: int
    # A line written in a span, not a span's start.
    event: bool = False


class PathWindow(SampleWindow):
    """The traces that began in [start, end) (Unix seconds) and took the step, by what came next."""

    traces: int
    next: list[NextStep]


class TracePathsRecord(EvidenceRecord):
    service: str
    step: str
    event: bool = False
    # The traces read that took it, and what came next in each window.
    traces: int
    windows: list[PathWindow] = []

    def next_steps(self) -> list[str]:
        """Every step that came right after it, the most often first."""
        followed: dict[str, int] = {}
        for window in self.windows:
            for after in window.next:
                followed[after.step] = followed.get(after.step, 0) + after.traces
        return sorted(followed, key=lambda step: (-followed[step], step))

    def is_event(self, step: str) -> bool:
        """Whether a step that came after it is a line written in a span."""
        return any(after.event for window in self.windows for after in window.next if after.step == step)

    def share(
        self, steps: Collection[str], *, start: datetime, end: datetime, given: str = ""
    ) -> tuple[float, int] | None:
        """The share of the traces in the windows within [start, end] that took it in which one of
        `steps` came right after it, with how many traces it is of; None when none took it. (`given`
        is the trace calls record's: a path's share has none.)"""
        if given:
            return None
        took = followed = 0
        for window in self.windows:
            if not (start <= window.began and window.ended <= end):
                continue
            took += window.traces
            followed += sum(after.traces for after in window.next if after.step in steps)
        return (min(1.0, followed / took), took) if took else None

    def ref_text(self) -> str:
        after = "、".join(clip(step, SAMPLE_CHARS) for step in self.next_steps())
        return f"{self.service}「{clip(self.step, SAMPLE_CHARS)}」在 {self.traces} 条调用链中之后接：{after or '无'}"

    def identity(self) -> str:
        return f"{self.service} {self.step}"
