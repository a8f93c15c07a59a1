"""A slot: what the answer to one ask must contain, filled by code from recorded tool output only,
and the one `结论` line it says.

The record the session stores; each kind's reader (`diagnosis.pipeline.asks`) fills it. It lives
beside that package, not in it, so the stored round records carry slots while the runner's calls go
through the toolbox interfaces that name those records.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.contracts import EvidenceBinding, RankedCandidate
from tools.source_names import source_name

CONCLUSION = "结论："


class DerivedNumber(BaseModel):
    """A number or time a slot's text says that code computed from one cited range series: the
    gatekeeper computes it again from the recorded result (`diagnosis.pipeline.derived`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    binding: EvidenceBinding
    # `median`: of the series' values in [start, end) ([start, end] when `closed`), said in `unit`;
    # `sample_time`: the time of day of its sample at `start`; `alert_start`: of the cited alert's start;
    # `call_share`: of the cited operation's spans in its windows within [start, end], the share that
    # made any of `calls` (of those that made `given`, when named); of a cited trace step, the share of
    # the traces that took it in which one of `calls` came next.
    statistic: Literal["median", "sample_time", "alert_start", "call_share"]
    start: datetime
    end: datetime
    closed: bool = False
    unit: str = ""
    said: str
    calls: list[str] = []
    given: str = ""


class TimelineMark(BaseModel):
    """One move a slot names, for its timeline chart: the words it is said in, when it began, and the
    records it is drawn from (a range series; a log pattern's lines; an alert, drawn as a step; an
    operation's calls, drawn as the share of its spans that made `calls` (of those that made `given`)
    in each window read)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    onset: datetime
    bindings: list[EvidenceBinding]
    calls: list[str] = []
    given: str = ""


class Slot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ask: Ask
    filled: bool
    # The `结论` line without its prefix and source, written by code from the evidence it cites.
    conclusion: str = ""
    # Where that evidence came from (the call's source, a runbook's document), said after it; "" in
    # records stored before it was kept apart (their conclusion ends with it).
    source: str = ""
    # Why the slot is not filled: no data, beyond the window, no runbook, a source failed.
    why: str = ""
    # What the sources cannot show, said as such (a window beyond retention, an action).
    limits: list[str] = []
    bindings: list[EvidenceBinding] = []
    # The numbers its conclusion says that are computed from a cited range result, not quoted.
    derived: list[DerivedNumber] = []
    # Its conclusion is an inference from the evidence it cites (root-cause candidates), never a
    # verified fact; `subjects` are the services it names as candidates (in the question's focus).
    inference: bool = False
    subjects: list[str] = []
    # The moves its conclusion names, in its order, for the timeline chart of the answer.
    timeline: list[TimelineMark] = []
    # The candidates (or changes) its conclusion names, in its order, with their numbers and refs, and
    # the invocations they were computed from (an investigation's range results, every series read).
    candidates: list[RankedCandidate] = []
    computed_from: list[int] = []

    def said(self) -> str:
        """The conclusion with its source as people name it (`… · 来源 Alertmanager`): the slot's
        claim text, read on the page as written."""
        return said_with_source(self.conclusion, source_name(self.source))

    def line(self) -> str:
        return conclusion_line(statement=self.conclusion, source=self.source, limits=self.limits)


def said_with_source(statement: str, source: str) -> str:
    return f"{statement} · 来源 {source}" if source else statement


def conclusion_line(*, statement: str, source: str, limits: Sequence[str]) -> str:
    """`结论：<statement> · 来源 <source>（<limits>）`: one filled slot's line in the answer."""
    limited = "；".join(limits)
    return f"{CONCLUSION}{said_with_source(statement, source)}" + (f"（{limited}）" if limited else "")
