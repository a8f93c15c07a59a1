"""`cause`: why (为什么、根因、原因、root cause), and what happened from a stated time (「从 10:05
开始」): an investigation by code (§23). Every service's key signals from the metrics source are read
over the incident and a baseline before it (bounded range queries, aggregated by the service label),
how each moved is computed, and root-cause candidates are ranked with the call graph:

    结论：根因候选：<subject>（<mechanism>，<onset>起，<before> → <after>）；其次：…

or `结论：未找到根因证据：<what was searched>`. Candidates are inferences: the slot says so and the
verdict counts it as one. The subject's alerts and lines are searched as before, for the executor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.logs import log_search
from diagnosis.pipeline.asks.shared import alert_found, alert_on_topic, failure
from diagnosis.pipeline.investigation.conclusion import (
    FIRST,
    MAX_CANDIDATES,
    candidates_said,
    joined,
    searched_said,
)
from diagnosis.pipeline.investigation.investigate import (
    MAX_QUERIES,
    Investigation,
    Plan,
    investigated,
    plan_of,
    window_of,
)
from diagnosis.pipeline.investigation.logs import LineAddresses, log_errors_signal
from diagnosis.pipeline.investigation.records import RecordMove, alert_started, record_moves
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import ALERTS, LOG_PATTERNS, LOG_SERIES, LOGS, SERIES, TRACE_CALLS, TRACE_PATHS
from tools.evidence.result import ToolResult


class Cause(AskKind):
    name = "cause"
    label = "原因"
    words = "cause"
    # Its candidates answer "为什么", "what caused" and "根因是哪个服务 / which service".
    answers = frozenset({"why", "what", "which"})
    reasoned = True
    # The investigation's range queries (one per key signal), the call graph's, the addresses served,
    # the error lines', the addresses in lines and the services' line patterns.
    call_budget = MAX_QUERIES
    investigates = True

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        if _alert_nowhere(ask, alerts):
            return []
        return [*investigation_plan(ask, alerts, world).calls(), *log_search(ask, alerts=alerts, world=world)]

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        found, alert_result = alert_found(ask, results)
        if _alert_nowhere(ask, [f.record for f in found]):
            return failure(alert_result, ask, f"未找到原因证据（未找到 {ask.subject} 告警）")
        plan = investigation_plan(ask, [f.record for f in found], world)
        investigation = investigated(plan, results, services=world.services)
        if investigation.candidates:
            return investigation_slot(ask, investigation)
        # Without a series that moved, what the subject's alerts and lines say moved.
        moves = record_moves(results, subject=ask.service, on_topic=_on_topic(ask, world))[:MAX_CANDIDATES]
        if moves:
            return moves_slot(ask, moves, computed_from=investigation.read)
        return Slot(
            ask=ask,
            filled=True,
            conclusion=searched_said(investigation, searched=_searched(ask, results)),
            computed_from=investigation.read,
        )


def investigation_plan(
    ask: Ask, alerts: Sequence[AlertRecord], world: SlotWorld, *, lead: timedelta = timedelta(0)
) -> Plan:
    """The plan of the ask's investigation: from the stated start, else the subject's earliest firing
    alert's, else the last minutes (opened `lead` earlier); over the metrics source's key signals (none
    without PromQL) and, with a log series source, every service's error lines; with a trace source,
    the calls of every operation and the step after each step, in samples of the traces; with a log
    patterns source, each service's line patterns."""
    ended = world.now - timedelta(minutes=ask.window.end_minutes_ago) if ask.window.asked else None
    start = incident_start(ask, alerts, now=world.now)
    window = window_of(now=world.now, start=start - lead if start is not None else None, end=ended)
    plan = Plan(window=window, signals=(), edges=())
    if SERIES.tool in world.tools:
        plan = plan_of(
            world.families,
            window=window,
            service_labels=world.service_labels,
            series=world.metrics,
            label_names=world.label_names,
        )
    if LOG_SERIES.tool in world.tools and world.service_labels:
        plan = replace(
            plan,
            logs=(log_errors_signal(world.service_labels[0]),),
            addresses=LineAddresses(labels=tuple(world.service_labels)),
        )
    if TRACE_CALLS.tool in world.tools:
        plan = replace(plan, traces=True)
    if TRACE_PATHS.tool in world.tools:
        plan = replace(plan, paths=True)
    if LOG_PATTERNS.tool in world.tools and world.service_labels:
        plan = plan.with_patterns(service_label=world.service_labels[0], services=world.services)
    return plan


def incident_start(ask: Ask, alerts: Sequence[AlertRecord], *, now: datetime) -> datetime | None:
    if ask.window.asked:
        return now - timedelta(minutes=ask.window.minutes + ask.window.end_minutes_ago)
    starts = [
        start for alert in alerts if alert.state == "firing" and (start := alert_started(alert)) is not None
    ]
    return min(starts, default=None)


def investigation_slot(ask: Ask, investigation: Investigation) -> Slot:
    said = candidates_said(investigation)
    return Slot(
        ask=ask,
        filled=True,
        conclusion=said.text,
        bindings=said.bindings,
        derived=said.derived,
        timeline=said.marks,
        inference=True,
        subjects=[c.subject for c in investigation.candidates[:MAX_CANDIDATES]],
        candidates=said.candidates,
        computed_from=investigation.read,
    )


def moves_slot(ask: Ask, moves: Sequence[RecordMove], *, computed_from: Sequence[int] = ()) -> Slot:
    """`computed_from`: the range results read that showed no move (ranked, then left out)."""
    said = joined([move.said() for move in moves], lead=FIRST)
    return Slot(
        ask=ask,
        filled=True,
        conclusion=said.text,
        bindings=said.bindings,
        derived=said.derived,
        timeline=said.marks,
        inference=True,
        subjects=list(dict.fromkeys(move.subject for move in moves)),
        candidates=said.candidates,
        computed_from=list(computed_from),
    )


def _alert_nowhere(ask: Ask, alerts: Sequence[AlertRecord]) -> bool:
    """An alert asked about that no source shows, on no service asked: no service's signals or lines
    are its symptoms (every service's would be another subject's)."""
    return ask.subject_kind == "alert" and not ask.service and not alerts


def _on_topic(ask: Ask, world: SlotWorld) -> Callable[[str], bool]:
    """Whether an alert is on the asked topic (its vocabulary topic, or a term of it in its name)."""
    return lambda alert: bool(ask.topic) and alert_on_topic(alert, ask.topic, world.vocabulary)


def _searched(ask: Ask, results: Sequence[ToolResult]) -> str:
    """What else was searched: the subject's alerts and lines."""
    about = f"{ask.service} 的" if ask.service else ""
    kinds = [
        label
        for kind, label in ((ALERTS, "告警"), (LOGS, "日志"))
        if any(kind.owns(r.tool_name) for r in results)
    ]
    return f"{about}{'与'.join(kinds)}中也未见数值变化的告警或日志" if kinds else ""
