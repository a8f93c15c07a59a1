"""One operation of one service in a sample of traces: in each window read (the baseline before the
incident, the incident), how many of its spans made each set of calls. A call is named `<callee
service> <operation>`: the service that served it and the operation the calling span names (a client
span in the caller, as gRPC and HTTP instrumentations write it, is served by the service of the span
under it).

The counts are what a share is computed from, by the investigation and again by the gatekeeper
(`share`): the share of the operation's spans in a window that made any of some calls, or of those
that made one call, the share that also made any of the others.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import SAMPLE_CHARS, clip


class CallShape(BaseModel):
    """How many spans made exactly these calls (each distinct call once, in name order)."""

    model_config = ConfigDict(extra="forbid")

    calls: list[str]
    spans: int


class SampleWindow(BaseModel):
    """A window of a trace sample, [start, end) in Unix seconds (the trace paths' windows too)."""

    model_config = ConfigDict(extra="forbid")

    start: float
    end: float

    @property
    def began(self) -> datetime:
        return datetime.fromtimestamp(self.start, UTC)

    @property
    def ended(self) -> datetime:
        return datetime.fromtimestamp(self.end, UTC)


class ShapeWindow(SampleWindow):
    """The spans that began in [start, end) (Unix seconds), by the calls they made."""

    shapes: list[CallShape]


class TraceCallsRecord(EvidenceRecord):
    service: str
    operation: str
    # Its spans in the traces read, and what they called in each window.
    spans: int
    windows: list[ShapeWindow] = []

    def calls(self) -> list[str]:
        """Every call its spans made, the most made first."""
        made: dict[str, int] = {}
        for window in self.windows:
            for shape in window.shapes:
                for call in shape.calls:
                    made[call] = made.get(call, 0) + shape.spans
        return sorted(made, key=lambda call: (-made[call], call))

    def share(
        self, calls: Collection[str], *, start: datetime, end: datetime, given: str = ""
    ) -> tuple[float, int] | None:
        """The share of its spans in the windows within [start, end] that made any of `calls`, among
        those that made `given` when one is named; with how many spans it is of. None when none."""
        counted = made = 0
        for window in self.windows:
            if not (start <= window.began and window.ended <= end):
                continue
            for shape in window.shapes:
                if given and given not in shape.calls:
                    continue
                counted += shape.spans
                made += shape.spans if any(call in shape.calls for call in calls) else 0
        return (made / counted, counted) if counted else None

    def ref_text(self) -> str:
        calls = "、".join(clip(call, SAMPLE_CHARS) for call in self.calls())
        return f"{self.service}「{self.operation}」{self.spans} 个 span 的调用：{calls or '无'}"

    def identity(self) -> str:
        return f"{self.service} {self.operation}"
