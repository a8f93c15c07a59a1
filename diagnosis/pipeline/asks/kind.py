"""What an ask kind is: its words, the calls its slot needs, and how its slot is read.

A kind module defines one class that subclasses `AskKind` (for its defaults) and registers one
instance in `registry.KINDS`; the runner (`reader`, `calls`, `slots`) never names a kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Protocol

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.kind import EvidenceKind
from tools.evidence.result import ToolResult
from tools.promql import Carrier, LabelNames
from tools.signal_roles import MetricFamily
from tools.vocabulary import Vocabulary

# A tool call as the toolbox takes it: (tool name, arguments).
Call = tuple[str, dict]


@dataclass(frozen=True)
class SlotWorld:
    """What slot code reads besides the results: the vocabulary, the labels naming a service, the
    tools the sources answer, the time and the log source's window; for an investigation, the
    metrics source's families, its series' label names, and the names the sources know."""

    vocabulary: Vocabulary
    service_labels: tuple[str, ...]
    tools: frozenset[str]
    now: datetime
    logs_window_minutes: int
    carrier: Carrier | None = None
    label_names: LabelNames | None = None
    families: tuple[MetricFamily, ...] = ()
    metrics: frozenset[str] = frozenset()
    services: frozenset[str] = frozenset()

    def unconfigured(self, kind: EvidenceKind) -> str:
        """What the answer says when no source serves the kind ("未配置日志源"); "" when one does."""
        return "" if kind.tool in self.tools else kind.unconfigured


class AskKind(Protocol):
    # The kind's name, as an `Ask` and the eval cases write it.
    name: ClassVar[str]
    # How a gap names the ask: `未能回答：checkout 的当前值 — …`.
    label: ClassVar[str]
    # The field of `Vocabulary.asks` that holds the words asking it.
    words: ClassVar[str]
    # The kinds of question word (`Vocabulary.interrogatives`: quantity, which, whether, why, what,
    # when) its slot answers: one no ask of the question answers caps the verdict (`asks.unread`).
    answers: ClassVar[frozenset[str]] = frozenset()
    # One ask per subject the question names; else one about the one service named, or about all.
    per_subject: ClassVar[bool] = True
    # A metric the question writes (`node_load1`) is its subject, before any alert or service.
    series_subject: ClassVar[bool] = False
    # An alert the question names is its subject; else the services named are (a service's lines).
    alert_subject: ClassVar[bool] = True
    # Its answer is reasoning over the evidence, which code only hedges: left open to the executor.
    reasoned: ClassVar[bool] = False
    # Calls its slot may make beyond the round's budget (an investigation's bounded range queries).
    call_budget: ClassVar[int] = 0
    # Its slot is an investigation's (§23): the candidates it ranks are the only root causes a model may state.
    investigates: ClassVar[bool] = False

    def answers_of(self, ask: Ask) -> frozenset[str]:
        """The kinds of question word this ask answers: the kind's, unless its slot says more."""
        return self.answers

    def alerts_first(self, ask: Ask) -> bool:
        """Whether its calls start from the subject's alerts (their `expr` names the series, their
        `runbook_url` the runbook): the runner queries them in a first turn. A metric the question
        names, for a kind that takes one, is queried by that name instead."""
        return not (self.series_subject and ask.subject_kind == "series")

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        """The calls its slot needs beyond the alerts, given the alert records the first turn found."""
        return []

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        """Its slot, read from the recorded tool results only (the asks' calls and the executor's)."""
        ...
