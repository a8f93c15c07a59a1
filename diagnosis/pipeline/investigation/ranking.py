"""Root-cause candidates ranked by code from how the services' key signals moved (§23).

A service's evidence is the agreement of its own signals that moved (each role counted once, by its
largest move, on a log scale so one huge ratio does not drown three agreeing signals). The call
graph moves it up or down:
- a service whose latency or errors moved while a service it calls showed a symptom (its latency,
  errors or resources going up) no later is explained by that callee (those roles count for
  less), and the callee gains for each caller it explains;
- a service whose traffic (requests, bytes) or mix of operations moved while a service calling it
  moved no later is explained by that caller: its load follows its callers;
- a caller's latency towards the services it calls (client-side) points at those callees whose
  edges from it got slower, else at all of them, shared among them (a callee that moved nothing of
  its own, a delay on its network, is still pointed at); calls that got faster point at nothing;
- a latency that fell (the service got faster) is seldom what made others slow: it counts for
  less, and no callee explains it;
- error lines from a service that had none count for more than a burst over a level of them;
- a line pattern that appeared or vanished is a symptom either way (its code took another path),
  and one a failing callee may pass up as well;
- so is an operation whose share of a service's spans moved (its code runs another path), and calls an
  operation's spans made that vanished or appeared (`calls`); calls that vanished after a callee
  answered are said of that callee, and explain the caller's symptoms, its mix of operations and its
  own calls;
- a step of a service's traces whose next step moved, a line's pair (`paths`), is its own code's path
  changing: it weighs most, and nothing explains it;
- a service whose own resources went up within a minute of its callees is not explained by them;
- a slow edge (a caller's view of one callee, or that view grown against the callee's own while
  the caller sees the call slower: a delay on the network between them) is said of the callee,
  unless the caller fans out: when the edges to at least half of a caller's callees (two or more)
  moved while those callees moved nothing of their own, and the caller's own signals moved no
  later, the common end is the caller (its CPU, its network, its code): those edges and its
  client-side latency are its own;
- a delay on a callee's network slows every call to it: a gap that grew on fewer than half of the
  edges into it that carried calls in the window is one caller's, or the noise of a few calls, and
  says nothing of the callee.
- a gap weighs more by the seconds its caller waited longer for the calls: a delay of seconds on a
  lightly loaded edge may move the ratio few spreads of its noise, yet it is what the callers wait on;
- a callee whose traffic stopped (fell to nearly nothing) while its caller's did not was left by that
  caller: its code no longer takes the path that calls it, and the caller gains by the move;
The earliest symptom (a latency, errors or a resource going up) among the moved services counts too,
unless a callee explains it: a symptom its callee passed up began no earlier than the callee's.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from diagnosis.pipeline.investigation.calls import ANSWERED_BEFORE, TRACE_CALLS
from diagnosis.pipeline.investigation.change import MOVED, Change
from diagnosis.pipeline.investigation.logs import LOG_ERRORS, LOG_PATTERN
from diagnosis.pipeline.investigation.paths import TRACE_PATH

# Roles said of a caller that point at what it calls, and of an edge between two services: the
# callee's latency as the caller sees it, and how much longer that is than the callee's own view
# (the network between them).
CALLER_SIDE = "client_latency"
EDGE = "edge_latency"
GAP = "edge_network"
EDGES = (EDGE, GAP)
# Each operation's share of a service's spans.
OPERATIONS = "operations"
# Roles a slow or failing callee moves in its callers (its callers log errors too, and answer their
# probes later), and roles that follow what a caller asks for (its traffic, its mix of operations).
FROM_CALLEES = ("latency", "probe_latency", "errors", LOG_ERRORS, LOG_PATTERN)
FROM_CALLERS = ("requests", "network_receive", "network_transmit", OPERATIONS, TRACE_CALLS)
# A service's own resources: when they moved first, its latency is not its callees'.
RESOURCES = ("cpu", "memory")
# What one role's move is worth: traffic moves are mostly effects of load, not causes.
ROLE_WEIGHT = {"requests": 0.5, "network_receive": 0.5, "network_transmit": 0.5}
# A burst of error lines is a service's own failure (its callers' are explained by it, FROM_CALLEES),
# where a latency or traffic move is as often its neighbours': it counts double.
ROLE_WEIGHT[LOG_ERRORS] = 2.0
# So do a line pattern that appeared or vanished, an operation's share that moved and the calls an
# operation's spans make: the path its own code takes changed.
ROLE_WEIGHT[LOG_PATTERN] = 2.0
ROLE_WEIGHT[OPERATIONS] = 2.0
ROLE_WEIGHT[TRACE_CALLS] = 2.0
ROLE_WEIGHT[ANSWERED_BEFORE] = 2.0
# A line no longer followed by the one that came after it (or followed by a new one) in a service's
# traces is its code's path changing where no callee's answer is seen: neither a callee's symptom nor a
# caller's load moves a pair of one service's lines. It weighs most (8, chosen with the paths' VANISHED_Z
# on half of Nezha's TrainTicket faults and held on the other half, README).
ROLE_WEIGHT[TRACE_PATH] = 8.0
# Error lines count double again from a service whose baseline's level of them is none: it began
# failing, which its neighbours' latency or load seldom makes it do (a failing callee that does explains
# it), while a latency quantile or an operation's share of a few requests a minute moves by many
# spreads of a flat baseline with no fault at all (measured on Nezha's TrainTicket: 6 faults ranked
# higher, none lower).
FROM_NONE = {LOG_ERRORS: 2.0}
# Roles compared over the whole incident rather than minute by minute (`_timed`).
WINDOWED = (TRACE_CALLS, ANSWERED_BEFORE, TRACE_PATH)
# How much of an explained role still counts, and what a service gains per service it explains or
# per caller whose client-side latency points at it.
EXPLAINED = 0.3
EXPLAINS = 0.5
POINTED_AT = 0.5
# A service that moved at most this long after another is still explained by it (minute data).
SAME_TIME = timedelta(minutes=1)
EARLIEST = 0.5
# A callee's traffic stopped when it fell below this share of its level: what a caller that stopped
# calling it gains, per such callee, is the move's weight times STOPPED_CALLS.
STOPPED = 0.05
STOPPED_CALLS = 1.0
# A caller fans out when the edges to this share of its callees (and at least FAN_OUT_EDGES) moved.
FAN_OUT_SHARE = 0.5
FAN_OUT_EDGES = 2
# A callee's network is slow when the gap grew on at least this share of the edges into it seen.
FAN_IN_SHARE = 0.5
# A gap is judged against its own noise, a ratio of two quantiles that swings widely on a lightly loaded
# edge, so a delay of seconds there may move it less than a busy edge's few milliseconds. What its caller
# waits longer for the calls is what a delay on the way costs: from WAITED_FROM (seconds) on, each
# tenfold more adds WAITED to the gap's weight (Nezha's TrainTicket: network delays first 9 → 14 of 14,
# none lower; chosen on half of its faults and held on the other half, README).
WAITED_FROM = 0.1
WAITED = 8.0


@dataclass(frozen=True)
class Moved:
    """One series that moved: the service it is said of, its role, the change, and where it is cited
    (an opaque ref the caller reads back); `caller`: the other end of an edge's series; `waited`: for a
    gap, how many seconds longer its caller waited for the calls (`candidates_ranked` sets it)."""

    service: str
    role: str
    change: Change
    ref: object = None
    caller: str = ""
    waited: float = 0.0

    @property
    def strength(self) -> float:
        """How far it moved, on a log scale (1 at the least move that counts)."""
        return 1.0 + math.log(self.change.score / MOVED)

    @property
    def weight(self) -> float:
        weight = self.strength * ROLE_WEIGHT.get(self.role, 1.0)
        if self.change.before == 0 and self.change.rising:
            weight *= FROM_NONE.get(self.role, 1.0)
        if self.waited > WAITED_FROM:
            weight += WAITED * math.log10(self.waited / WAITED_FROM)
        return weight


@dataclass
class Candidate:
    subject: str
    score: float
    onset: datetime
    # Its own moves, the weightiest first: the first is what its mechanism names.
    moves: list[Moved]
    explains: list[str] = field(default_factory=list)
    pointed_by: list[str] = field(default_factory=list)
    # Its callers' client-side latency moves that point at it, the weightiest first.
    pointers: list[Moved] = field(default_factory=list)
    # The traffic moves of the callees it stopped calling, the largest first.
    stopped_calling: list[Moved] = field(default_factory=list)

    @property
    def lead(self) -> Moved:
        """The move its mechanism names: its own weightiest (or the calls it stopped, when they weigh
        more), else the weightiest pointing at it."""
        own = self.moves[0] if self.moves else None
        stopped = self.stopped_calling[0] if self.stopped_calling else None
        if stopped is not None and (own is None or STOPPED_CALLS * stopped.strength > own.weight):
            return stopped
        return own if own is not None else self.pointers[0]


def candidates_ranked(
    moved: Sequence[Moved],
    *,
    edges: Iterable[tuple[str, str]] = (),
    gaps_seen: Collection[tuple[str, str]] = (),
    seen_slower: Mapping[tuple[str, str], float] | None = None,
) -> list[Candidate]:
    """The services that moved, most likely cause first. `gaps_seen`: the (caller, callee) pairs whose
    gap was read with calls in the incident window, moved or not; `seen_slower`: those whose caller saw
    the calls slower over the gap's windows, moved or not, with the seconds they took longer."""
    graph = {(caller, callee) for caller, callee in edges if caller != callee}
    graph |= {(m.caller, m.service) for m in moved if m.role in EDGES and m.caller}
    # A network that got faster is no symptom, nor one on an edge its caller does not see slower; how
    # much longer the caller waited is its edge latency's rise, or its view's over the gap's windows.
    waited = dict(seen_slower or {})
    for m in moved:
        if m.role == EDGE and m.change.rising:
            pair = (m.caller, m.service)
            waited[pair] = max(waited.get(pair, 0.0), m.change.after - m.change.before)
    moved = [
        replace(m, waited=waited[(m.caller, m.service)]) if m.role == GAP else m
        for m in moved
        if m.role != GAP or (m.change.rising and (m.caller, m.service) in waited)
    ]
    moved = _shared_gaps(moved, gaps_seen)
    fanned = _fanning_out(moved, graph)
    theirs = {id(move) for moves in fanned.values() for move in moves}
    moved = [move for move in moved if id(move) not in theirs]
    own: dict[str, dict[str, Moved]] = {}
    pointing: dict[str, Moved] = {}
    for move in moved:
        if move.role == CALLER_SIDE:
            # Calls that got faster point at nothing.
            if not move.change.rising:
                continue
            if move.service not in pointing or move.weight > pointing[move.service].weight:
                pointing[move.service] = move
            continue
        roles = own.setdefault(move.service, {})
        if move.role not in roles or move.weight > roles[move.role].weight:
            roles[move.role] = move
    callees_of: dict[str, set[str]] = {}
    for caller, callee in graph:
        callees_of.setdefault(caller, set()).add(callee)
    slower = {(m.caller, m.service) for m in moved if m.role in EDGES and m.caller and m.change.rising}
    pointed_at: dict[str, set[str]] = {}
    for caller in pointing:
        # The callees whose edges from it got slower, when the graph's latency says; else all.
        called = callees_of.get(caller, set())
        pointed_at[caller] = {callee for callee in called if (caller, callee) in slower} or called
        # A callee that moved nothing of its own (a delay on its network) is still pointed at.
        for callee in pointed_at[caller]:
            own.setdefault(callee, {})
    candidates = {
        service: Candidate(
            subject=service,
            score=0.0,
            onset=min(m.change.onset for m in _timed(roles.values()))
            if roles
            else _pointed_onset(service, pointing, pointed_at),
            moves=sorted(roles.values(), key=lambda m: -m.weight),
        )
        for service, roles in own.items()
    }
    for caller, move in pointing.items():
        callees = pointed_at[caller]
        for callee in callees:
            candidates[callee].pointed_by.append(caller)
            candidates[callee].pointers.append(move)
            candidates[callee].score += POINTED_AT * move.weight / len(callees)
    symptoms = {service: _symptom_onset(candidate) for service, candidate in candidates.items()}
    # (caller, callee) where the traces show the caller stopped going on after the callee answered.
    answered = {(m.caller, m.service) for m in moved if m.role == ANSWERED_BEFORE and m.caller}
    explained_by_callees: set[str] = set()
    for service, candidate in candidates.items():
        by_callee = sorted(
            callee
            for caller, callee in graph
            if caller == service
            and callee != service
            and (onset := symptoms.get(callee)) is not None
            and onset <= candidate.onset + SAME_TIME
        )
        callers = [caller for caller, callee in graph if callee == service]
        by_caller = _earlier(candidates, candidate, callers)
        # A move compared over the whole incident (WINDOWED), not minute by minute: any caller
        # that moved in it may have changed what it asks for.
        by_any_caller = [caller for caller in set(callers) if caller in candidates and caller != service]
        if by_callee and _saturated_first(candidate, min(symptoms[c] for c in by_callee)):
            by_callee = []
        answered_by = sorted(
            callee for caller, callee in answered if caller == service and callee in candidates
        )
        from_callees = False
        for move in candidate.moves:
            from_callee = move.role in FROM_CALLEES and _symptom(move) and bool(by_callee)
            # Its symptoms, its mix of operations and its own calls follow what the callee answered.
            from_callee |= move.role in (*FROM_CALLEES, OPERATIONS, TRACE_CALLS) and bool(answered_by)
            from_callees |= from_callee
            explained = from_callee or (
                move.role in FROM_CALLERS and bool(by_any_caller if move.role in WINDOWED else by_caller)
            )
            # A service that got faster is seldom what made others slow.
            explained |= move.role in (*FROM_CALLEES, EDGE) and not _symptom(move)
            candidate.score += move.weight * (EXPLAINED if explained else 1.0)
        for callee in sorted({*by_callee, *answered_by}) if from_callees else []:
            candidates[callee].explains.append(service)
            explained_by_callees.add(service)
    for caller, stopped in _calls_stopped(moved, graph).items():
        if caller in candidates:
            candidates[caller].score += STOPPED_CALLS * sum(move.strength for move in stopped)
            candidates[caller].stopped_calling = sorted(stopped, key=lambda m: -m.strength)
    for caller, moves in fanned.items():
        if caller in candidates:
            candidates[caller].score += max(move.weight for move in moves)
    earliest = min((onset for onset in symptoms.values() if onset is not None), default=None)
    for service, candidate in candidates.items():
        candidate.score += EXPLAINS * len(candidate.explains)
        candidate.pointers.sort(key=lambda m: -m.weight)
        if earliest is not None and symptoms[service] == earliest and service not in explained_by_callees:
            candidate.score += EARLIEST
    return sorted(candidates.values(), key=lambda c: (-c.score, c.onset, c.subject))


def _shared_gaps(moved: Sequence[Moved], seen: Collection[tuple[str, str]]) -> list[Moved]:
    """The moves without the gaps that grew on fewer than FAN_IN_SHARE of the edges into their callee."""
    grew: dict[str, set[str]] = {}
    for move in moved:
        if move.role == GAP:
            grew.setdefault(move.service, set()).add(move.caller)
    callers: dict[str, set[str]] = {callee: set(by) for callee, by in grew.items()}
    for caller, callee in seen:
        if callee in callers:
            callers[callee].add(caller)
    shared = {callee for callee, by in grew.items() if len(by) >= FAN_IN_SHARE * len(callers[callee])}
    return [move for move in moved if move.role != GAP or move.service in shared]


def _fanning_out(moved: Sequence[Moved], graph: set[tuple[str, str]]) -> dict[str, list[Moved]]:
    """The callers that fan out, each with the moves that are its own: its edges to callees that moved
    nothing of their own (traffic aside) and its client-side latency."""
    callees_of: dict[str, set[str]] = {}
    for caller, callee in graph:
        callees_of.setdefault(caller, set()).add(callee)
    own_onset: dict[str, datetime] = {}
    for move in moved:
        if move.role not in (*EDGES, CALLER_SIDE, *FROM_CALLERS):
            own_onset[move.service] = min(own_onset.get(move.service, move.change.onset), move.change.onset)
    edges_from: dict[str, list[Moved]] = {}
    for move in moved:
        if move.role in EDGES and move.caller and move.change.rising and move.service not in own_onset:
            edges_from.setdefault(move.caller, []).append(move)
    fanned = {}
    for caller, edges in edges_from.items():
        quiet = {move.service for move in edges}
        if (
            caller in own_onset
            and len(quiet) >= FAN_OUT_EDGES
            and len(quiet) >= FAN_OUT_SHARE * len(callees_of.get(caller, ()))
            and own_onset[caller] <= min(move.change.onset for move in edges) + SAME_TIME
        ):
            fanned[caller] = edges + [m for m in moved if m.role == CALLER_SIDE and m.service == caller]
    return fanned


def _calls_stopped(moved: Sequence[Moved], graph: set[tuple[str, str]]) -> dict[str, list[Moved]]:
    """The callers whose calls to a callee stopped while their own traffic did not, each with the
    callees' traffic moves."""
    stopped = {
        m.service: m
        for m in moved
        if m.role == "requests" and not m.change.rising and m.change.after <= STOPPED * m.change.before
    }
    left: dict[str, list[Moved]] = {}
    for caller, callee in sorted(graph):
        if callee in stopped and caller not in stopped:
            left.setdefault(caller, []).append(stopped[callee])
    return left


def _symptom_onset(candidate: Candidate) -> datetime | None:
    """When what a service passes up to its callers began: its latency, errors or resources going up
    (or its callers' calls to it getting slower), not its traffic (that follows its callers) nor its
    getting faster."""
    symptoms = [m for m in candidate.moves if m.role not in FROM_CALLERS and _symptom(m)]
    onsets = [m.change.onset for m in _timed(symptoms)] if symptoms else []
    return min([*onsets, *(m.change.onset for m in candidate.pointers)], default=None)


def _timed(moves: Iterable[Moved]) -> list[Moved]:
    """The moves whose onset is a minute's, or all when none is: an operation's calls are compared
    over the whole incident, so theirs is only its start and says nothing of what moved first."""
    moves = list(moves)
    return [m for m in moves if m.role not in WINDOWED] or moves


def _symptom(move: Moved) -> bool:
    """Whether the move is one a service passes up: a rise, or a line pattern or a call that appeared
    or vanished (a path its code no longer takes is as much a change as a new one)."""
    return move.change.rising or move.role in (LOG_PATTERN, TRACE_CALLS, ANSWERED_BEFORE, TRACE_PATH)


def _saturated_first(candidate: Candidate, callee_onset: datetime) -> bool:
    """Whether the service's own resources (CPU, memory) went up no later than its callees: then its
    latency is its own, not theirs (a CPU that fell is a caller waiting, not saturated)."""
    return any(
        m.role in RESOURCES and m.change.rising and m.change.onset <= callee_onset + SAME_TIME
        for m in candidate.moves
    )


def _pointed_onset(service: str, pointing: dict[str, Moved], pointed_at: dict[str, set[str]]) -> datetime:
    return min(move.change.onset for caller, move in pointing.items() if service in pointed_at[caller])


def _earlier(candidates: dict[str, Candidate], candidate: Candidate, others: Iterable[str]) -> list[str]:
    return sorted(
        other
        for other in set(others)
        if other in candidates
        and other != candidate.subject
        and candidates[other].onset <= candidate.onset + SAME_TIME
    )
