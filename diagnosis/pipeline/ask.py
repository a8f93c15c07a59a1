"""One ask of a question: its kind, the subject it is about, the window it asks over.

The record every stage passes around and the session stores; what each kind means (its words, its
calls, how its slot is read) is in `diagnosis.pipeline.asks`. It lives beside that package, not in
it, so the stage contracts can carry asks while the kinds cite the contracts' evidence bindings.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.windows import Window
from tools.metric_query import Measure

SubjectKind = Literal["service", "alert", "series", "all"]


class AskWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    minutes: int
    end_minutes_ago: int = 0
    label: str
    asked: bool = False

    @classmethod
    def of(cls, window: Window, *, now: datetime) -> AskWindow:
        return cls(
            minutes=window.minutes,
            end_minutes_ago=max(0, int((now - window.end).total_seconds() // 60)),
            label=window.label,
            asked=window.asked,
        )


class Ask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    # The name of its kind, a row of `asks.registry.KINDS` (code reads asks only into those).
    kind: str
    # A service, alert or series name the sources know (or the question names); "" = all of them.
    subject: str = ""
    subject_kind: SubjectKind = "all"
    # The service an alert or series was asked about on ("billing 的 node_load1").
    service: str = ""
    # The vocabulary topic asked about (error, slow …), "" when none.
    topic: str = ""
    window: AskWindow
    # The word of an action ask ("重启"), so the statement names what cannot be done.
    word: str = ""
    # Label values the question writes beside a metric it names ("/", "eth0"): its series are those.
    values: tuple[str, ...] = ()
    # A logs ask for lines counted by what their format says (`tools.logcounts`): slow lines, access
    # lines by path or status, error lines by class; "" for lines with a property.
    measure: str = ""
    # The HTTP status (`404`) or class (`5xx`) the question counts access lines of.
    status: str = ""
    # The status or class whose share of every access line the question asks ("5xx 占比"): the lines
    # counted by status, the share said from that count.
    share: str = ""
    # The duration the question calls slow ("超过 2 秒"), in milliseconds; None for the vocabulary's.
    threshold_ms: int | None = None
    # The query code built from the metric catalog for what the words ask (a rate, a p99, a ratio).
    quantity: Measure | None = None
    # Why the catalog answers none of its words ("指标目录中没有与「驱逐」对应的指标"): said, never
    # answered with another metric.
    unnamed: str = ""

    def about(self) -> str:
        """What the ask is about, as its label names it: `billing 的 node_load1`, `checkout`, or ""."""
        if self.service and self.subject and self.service != self.subject:
            return f"{self.service} 的 {self.subject}"
        return self.subject or self.service
