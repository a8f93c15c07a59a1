"""One investigation over a metrics source: the plan (windows, key signals, their bounded queries)
and what its recorded results say (how each series moved, the call graph, the ranked candidates).

Two pure functions over small interfaces: `plan_of` needs the catalog's families and a way to ask a
family's label names; `investigated` reads the results of the plan's calls, whoever made them (the
asks' calls are recorded by the toolbox, so every number below is cited).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from diagnosis.pipeline.investigation.calls import LABEL as CALLS_LABEL
from diagnosis.pipeline.investigation.calls import TRACE_CALLS as CALLS_ROLE
from diagnosis.pipeline.investigation.calls import UNIT as CALLS_UNIT
from diagnosis.pipeline.investigation.calls import CallsMove, callee_of, calls_moved, operation_of
from diagnosis.pipeline.investigation.change import Point, change_of, series_points, window_median
from diagnosis.pipeline.investigation.logs import (
    ADDRESS_LABEL,
    LineAddresses,
    log_patterns_selectors,
    log_patterns_signal,
    pattern_change,
)
from diagnosis.pipeline.investigation.paths import LABEL as PATH_LABEL
from diagnosis.pipeline.investigation.paths import TRACE_PATH, path_moved
from diagnosis.pipeline.investigation.paths import UNIT as PATH_UNIT
from diagnosis.pipeline.investigation.ranking import EDGE, GAP, Candidate, Moved, candidates_ranked
from diagnosis.pipeline.investigation.signals import (
    MAX_SIGNALS,
    EdgeSignal,
    KeySignal,
    ServedAddresses,
    key_signals,
    may_signal,
    served_addresses,
    target_signal,
)
from tools.evidence.kind import EvidenceKind
from tools.evidence.registry import LOG_PATTERNS, LOG_SERIES, SERIES, TRACE_CALLS, TRACE_PATHS
from tools.evidence.result import Ref, ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_paths.record import TracePathsRecord
from tools.signal_roles import MetricFamily, signal_roles

# The most range queries one investigation reads (key signals, graph, lines, the traces' calls, and
# then the services' line patterns, one each, for as many services as remain).
MAX_QUERIES = 60
# The incident is compared with this long before its start.
BASELINE = timedelta(minutes=30)
# Without a stated start or an alert's, the incident is the last this long.
DEFAULT_INCIDENT = timedelta(minutes=15)
Call = tuple[str, dict]
LabelNames = Callable[[str], Iterable[str]]


@dataclass(frozen=True)
class Window:
    """The incident from `start` (its stated or alerted start) to `end`, the baseline before it; the
    range queries read from `baseline_start` to `now`."""

    start: datetime
    end: datetime
    now: datetime
    baseline_start: datetime

    @property
    def minutes(self) -> int:
        return max(1, math.ceil((self.now - self.baseline_start).total_seconds() / 60))

    @property
    def incident_minutes(self) -> int:
        """The minutes from the incident's start to now, the last of those read."""
        return max(1, min(self.minutes, math.ceil((self.now - self.start).total_seconds() / 60)))


def window_of(*, now: datetime, start: datetime | None, end: datetime | None = None) -> Window:
    began = start if start is not None and start < now else now - DEFAULT_INCIDENT
    return Window(start=began, end=min(end or now, now), now=now, baseline_start=began - BASELINE)


@dataclass(frozen=True)
class Plan:
    window: Window
    signals: tuple[KeySignal, ...]
    edges: tuple[EdgeSignal, ...]
    # Key signals past the bound, not read.
    left_out: int = 0
    # Signals read from the log source (LogQL metric queries): every service's error lines.
    logs: tuple[KeySignal, ...] = ()
    # The call graph where no series holds it: the addresses services serve and their lines name.
    served: ServedAddresses | None = None
    addresses: LineAddresses | None = None
    # The line patterns read: one stream selector a service (`logs.log_patterns_selectors`), the
    # services' label, and how many services were left out past MAX_QUERIES.
    patterns: tuple[str, ...] = ()
    patterns_by: str = ""
    patterns_left_out: int = 0
    # With a trace source: the calls each operation's spans made, over a sample of the window's traces;
    # and each step's next in another sample (`paths`).
    traces: bool = False
    paths: bool = False

    def calls(self) -> list[Call]:
        """One range query per key signal (every service at once), one instant query of the graph;
        with a log source, one range query of the addresses in lines and one instant query of the
        addresses services serve (what those addresses are matched against), then each service's
        line patterns."""
        minutes = self.window.minutes
        return self.signal_calls() + [
            (LOG_PATTERNS.tool, {"query": selector, "minutes": minutes}) for selector in self.patterns
        ]

    def with_patterns(self, *, service_label: str, services: Collection[str]) -> Plan:
        """The plan with the line patterns of as many of the services as MAX_QUERIES leaves room for."""
        room = max(0, MAX_QUERIES - len(self.signal_calls()))
        return replace(
            self,
            patterns=log_patterns_selectors(service_label, services, limit=room),
            patterns_by=service_label,
            patterns_left_out=max(0, len(services) - room),
        )

    def signal_calls(self) -> list[Call]:
        """The calls before the line patterns'."""
        minutes = self.window.minutes
        traces = {"minutes": minutes, "incident_minutes": self.window.incident_minutes}
        addresses = [self.addresses.query] if self.addresses is not None else []
        served = [self.served.query()] if self.served is not None and addresses else []
        return (
            [(SERIES.tool, {"query": s.query, "minutes": minutes}) for s in self.signals]
            + [(SERIES.tool, {"query": e.query(minutes), "minutes": 0}) for e in self.edges]
            + [(SERIES.tool, {"query": query, "minutes": 0}) for query in served]
            + [(LOG_SERIES.tool, {"query": s.query, "minutes": minutes}) for s in self.logs]
            + [(LOG_SERIES.tool, {"query": query, "minutes": minutes}) for query in addresses]
            + ([(TRACE_CALLS.tool, traces)] if self.traces else [])
            + ([(TRACE_PATHS.tool, traces)] if self.paths else [])
        )


def plan_of(
    families: Iterable[MetricFamily],
    *,
    window: Window,
    service_labels: Sequence[str],
    series: Collection[str],
    label_names: LabelNames | None,
) -> Plan:
    """The key signals of the families (labels asked only of those that may be one) and their window."""
    labelled = [
        MetricFamily(family.name, family.type, family.help, _labels(family, series, label_names))
        for family in families
        if may_signal(family.name, family.type, family.help)
    ]
    signals, edges, left_out = key_signals(labelled, service_labels=service_labels, series=series)
    served = served_addresses(labelled, service_labels=service_labels, series=series)
    targets = signal_roles().targets
    if targets is not None and targets.metric in series and label_names is not None:
        target = target_signal(service_labels=service_labels, labels=label_names(targets.metric))
        if target is not None:
            # Within the bound: the targets' query takes the last key signal's place.
            left_out += max(0, len(signals) + 1 - MAX_SIGNALS)
            signals = [*signals[: MAX_SIGNALS - 1], target]
    return Plan(window=window, signals=tuple(signals), edges=tuple(edges), left_out=left_out, served=served)


@dataclass(frozen=True)
class Cited:
    """Where a move is cited: the recorded result and the ref of its series."""

    result: ToolResult
    ref: Ref
    record: SeriesRecord | TraceCallsRecord | TracePathsRecord
    # The key signal the series is of (None for a call-graph edge).
    signal: KeySignal | None = None
    # An operation's calls that moved: which, and among the spans that made which call; or a step's
    # next steps that moved (of the traces that took it).
    calls: CallsMove | None = None


@dataclass
class Investigation:
    plan: Plan
    moved: list[Moved] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    # (caller, callee) with the cited edge series.
    edges: dict[tuple[str, str], Cited] = field(default_factory=dict)
    # (caller, callee) whose network gap was read with calls in the incident window.
    gaps_seen: set[tuple[str, str]] = field(default_factory=set)
    # (caller, callee) whose gap grew because the caller saw the calls slower (`_seen_slower`), with the
    # seconds its view rose by.
    seen_slower: dict[tuple[str, str], float] = field(default_factory=dict)
    # Service → the cited series of its scrape target whose address a probe's series is said by.
    targets: dict[str, Cited] = field(default_factory=dict)
    # The range results read and the series in them.
    results_read: int = 0
    series_read: int = 0
    # The invocations of the results read (the graph's too): what the candidates are computed from.
    read: list[int] = field(default_factory=list)


def investigated(plan: Plan, results: Sequence[ToolResult], *, services: Collection[str]) -> Investigation:
    """What the plan's recorded results say: every series that moved, the graph, the candidates among
    `services` (the inventory's: a name the sources do not know is never a candidate)."""
    investigation = Investigation(plan=plan)
    window = plan.window
    owners = _address_owners(plan, results)
    read = [(signal, SERIES) for signal in plan.signals] + [(signal, LOG_SERIES) for signal in plan.logs]
    # Each edge's latency as its caller sees it, by (family, caller, callee): what a gap is judged by.
    caller_views: dict[tuple[str, str, str], list[Point]] = {}
    for signal, kind in read:
        result = _result(results, signal.query, window.minutes, kind=kind)
        for record, ref in _range_series(result, investigation):
            service = str(record.metric.get(signal.by, ""))
            points = series_points(record)
            change = change_of(
                points,
                onset_hint=window.start,
                baseline_start=window.baseline_start,
                end=window.end,
                floor=signal.floor,
                **({"level_window": signal.level_window} if signal.level_window is not None else {}),
            )
            caller = str(record.metric.get(signal.caller, "")) if signal.caller else ""
            target = (
                owners.get(address_of(str(record.metric.get(signal.address, "")))) if signal.address else None
            )
            owner = str(target.record.metric.get(target.signal.by, "")) if target is not None else ""
            if signal.role == GAP and caller and any(at >= window.start for at, _ in points):
                investigation.gaps_seen.add((caller, service))
            if signal.role == EDGE and caller:
                caller_views[(signal.metric, caller, service)] = points
            if owner and owner != service:
                # A probe of another service's address: said of that service, seen from the prober.
                caller, service = service, owner
                investigation.targets[owner] = target
            if service and change is not None:
                investigation.moved.append(
                    Moved(
                        service=service,
                        role=signal.role,
                        change=change,
                        ref=Cited(result, ref, record, signal),
                        caller=caller,
                    )
                )
    investigation.seen_slower = _seen_slower(investigation.moved, caller_views)
    _patterns_read(plan, results, investigation)
    _calls_read(plan, results, investigation)
    _paths_read(plan, results, investigation)
    for edge in plan.edges:
        result = _result(results, edge.query(window.minutes), 0)
        if result is not None:
            investigation.read.append(result.invocation_id)
        for record, ref in result.cited() if result is not None else []:
            pair = (str(record.metric.get(edge.caller, "")), str(record.metric.get(edge.callee, "")))
            if isinstance(record, SeriesRecord) and all(pair) and _positive(record):
                investigation.edges[pair] = Cited(result, ref, record)
    addressed, read = _addressed(plan, results, owners)
    investigation.read += read
    for pair, cited in addressed.items():
        investigation.edges.setdefault(pair, cited)
    known = set(services)
    ranked = candidates_ranked(
        investigation.moved,
        edges=investigation.edges,
        gaps_seen=investigation.gaps_seen,
        seen_slower=investigation.seen_slower,
    )
    investigation.candidates = [c for c in ranked if c.subject in known]
    return investigation


def _seen_slower(
    moved: Iterable[Moved], caller_views: dict[tuple[str, str, str], list[Point]]
) -> dict[tuple[str, str], float]:
    """The (caller, callee) pairs whose gap grew because the calls took longer for the caller, with the
    seconds they took longer: its own view of them (the gap's numerator, `caller_views`) rose between
    the gap's windows by at least half the gap's growth (on a log scale), whether or not it moved MOVED
    spreads of its own noise. A gap that grew mostly because the callee's view fell is no delay on the
    way."""
    slower = {}
    for move in moved:
        cited = move.ref
        if move.role != GAP or not isinstance(cited, Cited) or cited.signal is None:
            continue
        change = move.change
        if not change.rising or change.before <= 0:
            continue
        points = caller_views.get((cited.signal.metric, move.caller, move.service), [])
        before = window_median(points, start=change.level_start, end=change.baseline_end)
        after = window_median(points, start=change.onset, end=change.end, closed=True)
        if before and after and after / before >= math.sqrt(change.after / change.before):
            slower[(move.caller, move.service)] = after - before
    return slower


def _patterns_read(plan: Plan, results: Sequence[ToolResult], investigation: Investigation) -> None:
    """Each service's line patterns that appeared or vanished, as moves of that service."""
    window = plan.window
    signal = log_patterns_signal(plan.patterns_by)
    for selector in plan.patterns:
        result = _result(results, selector, window.minutes, kind=LOG_PATTERNS)
        for record, ref in _range_series(result, investigation):
            service = str(record.metric.get(signal.by, ""))
            change = pattern_change(
                series_points(record),
                onset_hint=window.start,
                baseline_start=window.baseline_start,
                end=window.end,
            )
            if service and change is not None:
                investigation.moved.append(
                    Moved(
                        service=service,
                        role=signal.role,
                        change=change,
                        ref=Cited(result, ref, record, signal),
                    )
                )


# What an operation's calls moving is, as a key signal: a share of its spans, said of a service.
CALLS_SIGNAL = KeySignal(
    role=CALLS_ROLE, label=CALLS_LABEL, unit=CALLS_UNIT, metric=TRACE_CALLS.tool, by="service", query=""
)


def _calls_read(plan: Plan, results: Sequence[ToolResult], investigation: Investigation) -> None:
    """Each operation whose calls moved, as a move of the service it says something of; one whose own
    service's operation it calls moved too is explained by that one (a service's internal steps pass an
    early return up: the innermost that moved says where it came from)."""
    window = plan.window
    result = _result(results, "", window.minutes, kind=TRACE_CALLS) if plan.traces else None
    if result is None:
        return
    investigation.results_read += 1
    investigation.read.append(result.invocation_id)
    moves: dict[tuple[str, str], tuple[CallsMove, Ref, TraceCallsRecord]] = {}
    for record, ref in result.cited():
        if not isinstance(record, TraceCallsRecord):
            continue
        # The traces show who calls whom, where no series does.
        for callee in {callee_of(call) for call in record.calls()} - {record.service}:
            investigation.edges.setdefault((record.service, callee), Cited(result, ref, record))
        if (move := calls_moved(record)) is not None:
            moves[(record.service, record.operation)] = (move, ref, record)
    for (service, _), (move, ref, record) in moves.items():
        inner = [operation_of(call) for call in record.calls() if callee_of(call) == service]
        if any((service, operation) in moves for operation in inner):
            continue
        investigation.moved.append(
            Moved(
                service=move.service,
                role=move.role,
                change=move.change,
                ref=Cited(result, ref, record, CALLS_SIGNAL, calls=move),
                # The caller that stopped after the callee answered.
                caller=record.service if move.given else "",
            )
        )


# What a trace's path moving is, as a key signal: a share of the traces that took a step.
PATHS_SIGNAL = KeySignal(
    role=TRACE_PATH, label=PATH_LABEL, unit=PATH_UNIT, metric=TRACE_PATHS.tool, by="service", query=""
)


def _paths_read(plan: Plan, results: Sequence[ToolResult], investigation: Investigation) -> None:
    """Each step whose next step moved (a line's pair), as a move of the service that took it."""
    result = _result(results, "", plan.window.minutes, kind=TRACE_PATHS) if plan.paths else None
    if result is None:
        return
    investigation.results_read += 1
    investigation.read.append(result.invocation_id)
    for record, ref in result.cited():
        if isinstance(record, TracePathsRecord) and (move := path_moved(record)) is not None:
            investigation.moved.append(
                Moved(
                    service=move.service,
                    role=move.role,
                    change=move.change,
                    ref=Cited(result, ref, record, PATHS_SIGNAL, calls=move),
                )
            )


def _range_series(
    result: ToolResult | None, investigation: Investigation
) -> Iterator[tuple[SeriesRecord, Ref]]:
    """The range series of a result read (none for a missing one), counted as read."""
    if result is None:
        return
    investigation.results_read += 1
    investigation.read.append(result.invocation_id)
    for record, ref in result.cited():
        if isinstance(record, SeriesRecord) and not record.instant:
            investigation.series_read += 1
            yield record, ref


def address_of(text: str) -> str:
    """The `host:port` of an address label's value (a URL or `host:port`); "" when none."""
    if "://" in text:
        text = urlsplit(text).netloc
    return text.rsplit("@", 1)[-1] if ":" in text else ""


def _address_owners(plan: Plan, results: Sequence[ToolResult]) -> dict[str, Cited]:
    """Scrape-target address → the cited series of that target (its service in its labels)."""
    owners: dict[str, Cited] = {}
    targets = signal_roles().targets
    for signal in plan.signals:
        is_target = targets is not None and signal.role == targets.role and signal.metric == targets.metric
        result = _result(results, signal.query, plan.window.minutes) if is_target else None
        for record, ref in result.cited() if result is not None else []:
            # A target named by a URL is a probe's (the prober's scrape), not the address's owner.
            value = str(record.metric.get(signal.address, ""))
            address = address_of(value) if "://" not in value else ""
            if isinstance(record, SeriesRecord) and address and record.metric.get(signal.by):
                owners[address] = Cited(result, ref, record, signal)
    return owners


def _addressed(
    plan: Plan, results: Sequence[ToolResult], targets: dict[str, Cited]
) -> tuple[dict[tuple[str, str], Cited], list[int]]:
    """(service, the service serving an address its lines name) with the cited count of those lines,
    and the invocations read: an address is served by the service whose scrape target it is
    (`targets`) or whose exporter reads its series from it (`plan.served`)."""
    lines = plan.addresses
    found = _result(results, lines.query, plan.window.minutes, kind=LOG_SERIES) if lines else None
    if found is None:
        return {}, []
    owners = {address: str(c.record.metric.get(c.signal.by, "")) for address, c in targets.items()}
    served = plan.served
    result = _result(results, served.query(), 0) if served is not None else None
    for record, _ in result.cited() if result is not None else []:
        address = address_of(str(record.metric.get(served.address, "")))
        if isinstance(record, SeriesRecord) and address and record.metric.get(served.by):
            owners.setdefault(address, str(record.metric[served.by]))
    edges: dict[tuple[str, str], Cited] = {}
    for record, ref in found.cited():
        if not isinstance(record, SeriesRecord):
            continue
        caller = next((str(record.metric[label]) for label in lines.labels if record.metric.get(label)), "")
        callee = owners.get(address_of(str(record.metric.get(ADDRESS_LABEL, ""))), "")
        if caller and callee and caller != callee and any(value > 0 for _, value in series_points(record)):
            edges.setdefault((caller, callee), Cited(found, ref, record))
    read = [found.invocation_id] + ([result.invocation_id] if result is not None else [])
    return edges, read if edges else []


def _labels(family: MetricFamily, series: Collection[str], label_names: LabelNames | None) -> tuple[str, ...]:
    if family.labels or label_names is None:
        return family.labels
    # A histogram's samples are its `_bucket` series (their `le` label aside, its labels).
    if family.type.lower() == "histogram" and f"{family.name}_bucket" in series:
        return tuple(sorted(set(label_names(f"{family.name}_bucket")) - {"le"}))
    name = (
        family.name
        if family.name in series or f"{family.name}_total" not in series
        else f"{family.name}_total"
    )
    return tuple(sorted(label_names(name)))


def _result(
    results: Sequence[ToolResult], query: str, minutes: int, *, kind: EvidenceKind = SERIES
) -> ToolResult | None:
    return next(
        (
            r
            for r in results
            if r.success
            and kind.owns(r.tool_name)
            and r.request.query == query
            and (r.request.minutes or 0) == minutes
        ),
        None,
    )


def _positive(record: SeriesRecord) -> bool:
    _, value = record.sample()
    try:
        return float(str(value)) > 0
    except ValueError:
        return False
