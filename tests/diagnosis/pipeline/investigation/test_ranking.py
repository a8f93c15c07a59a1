"""Candidates ranked from how the services moved: agreement of a service's own signals, the call graph
(a callee that explains its callers ranks above them; a caller's client-side latency points at its
callees), and the earliest onset. Names of two worlds: a shop's and the demo world's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.change import Change
from diagnosis.pipeline.investigation.ranking import Moved, candidates_ranked

T0 = datetime(2026, 11, 29, 14, 30, tzinfo=UTC)
WORLDS = {
    "shop": ("storefront", "checkout", "billing-db"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
FAN_OUT_WORLDS = {
    "shop": ("storefront", "catalog", "basket", "pricing", "billing-db"),
    "demo": ("gateway-service", "order-service", "user-service", "inventory-service", "payment-service"),
}
fan_out_worlds = pytest.mark.parametrize("services", FAN_OUT_WORLDS.values(), ids=FAN_OUT_WORLDS.keys())


def moved(
    service: str, role: str, *, score: float = 20.0, minute: int = 0, caller: str = "", falling: bool = False
) -> Moved:
    onset = T0 + timedelta(minutes=minute)
    change = Change(
        onset=onset, before=2.0 if falling else 1.0, after=1.0 if falling else 2.0, score=score, level_start=T0 - timedelta(minutes=12),
        baseline_start=T0 - timedelta(minutes=30), baseline_end=T0 - timedelta(minutes=2), end=onset + timedelta(minutes=5),
    )  # fmt: skip
    return Moved(service=service, role=role, change=change, caller=caller)


@per_world
def test_a_callee_whose_latency_explains_its_callers_ranks_above_them(services):
    entry, middle, leaf = services
    moves = [
        moved(entry, "latency", score=40),
        moved(middle, "latency", score=30),
        moved(leaf, "latency", minute=-1),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle), (middle, leaf)])

    assert [c.subject for c in ranked] == [leaf, middle, entry]
    assert ranked[0].explains == [middle]


@per_world
def test_a_caller_whose_own_cpu_moved_first_is_not_explained_by_its_callee(services):
    entry, middle, _ = services
    moves = [
        moved(entry, "cpu", score=60, minute=-1),
        moved(entry, "latency", score=30),
        moved(middle, "latency", score=4),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert ranked[0].subject == entry
    assert ranked[0].lead.role == "cpu"


@per_world
def test_a_caller_whose_cpu_moved_within_the_same_minute_as_its_callee_is_not_explained_by_it(services):
    """Minute data: a resource moving a few seconds after a callee is still the caller's own."""
    entry, middle, _ = services
    moves = [
        moved(entry, "cpu", score=20, minute=1),
        moved(entry, "latency", score=20, minute=1),
        moved(middle, "latency", score=20),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert ranked[0].subject == entry
    assert ranked[1].explains == []


@per_world
def test_calls_that_got_faster_point_at_nothing_and_explain_nothing(services):
    """A falling latency is no symptom: neither a caller's client-side one nor its own."""
    entry, middle, leaf = services
    moves = [
        moved(middle, "client_latency", score=50, falling=True),
        moved(entry, "latency", score=30, falling=True),
        moved(middle, "cpu", score=5, minute=-1),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle), (middle, leaf)])

    assert leaf not in [c.subject for c in ranked]
    middle_candidate = next(c for c in ranked if c.subject == middle)
    assert middle_candidate.explains == []


@fan_out_worlds
def test_client_side_latency_points_at_the_callees_whose_edges_from_it_got_slower(services):
    entry, slow, busy, *_ = services
    callees = services[1:]
    moves = [
        moved(entry, "client_latency", score=40),
        moved(slow, "edge_latency", score=10, caller=entry),
        moved(busy, "requests", score=10),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, callee) for callee in callees])

    pointed = {c.subject: c.pointed_by for c in ranked}
    assert pointed[slow] == [entry]
    assert pointed[busy] == []
    assert ranked[0].subject == slow
    # A callee nothing points at and that moved nothing is no candidate (it would have nothing to say).
    assert set(pointed) == {slow, busy}
    assert all(c.lead for c in ranked)


@per_world
def test_client_side_latency_points_at_the_callee_even_when_it_moved_nothing_of_its_own(services):
    entry, middle, leaf = services
    moves = [moved(middle, "client_latency", score=50), moved(entry, "requests", score=4)]

    ranked = candidates_ranked(moves, edges=[(entry, middle), (middle, leaf)])

    assert ranked[0].subject == leaf
    assert ranked[0].pointed_by == [middle]
    assert ranked[0].lead.service == middle  # what it says rests on the caller's series


@per_world
def test_agreeing_signals_outrank_one_larger_move(services):
    _, middle, leaf = services
    moves = [
        moved(middle, "latency", score=60),
        moved(leaf, "cpu", score=20),
        moved(leaf, "memory", score=20),
    ]

    ranked = candidates_ranked(moves)

    assert [c.subject for c in ranked] == [leaf, middle]


@per_world
def test_traffic_that_follows_a_caller_counts_for_less_than_the_caller(services):
    entry, middle, _ = services
    moves = [
        moved(entry, "cpu", score=20, minute=-1),
        moved(middle, "requests", score=30),
        moved(middle, "network_receive", score=30),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert ranked[0].subject == entry


@fan_out_worlds
def test_a_caller_whose_edges_to_most_of_its_quiet_callees_moved_is_their_common_cause(services):
    """The caller's own latency moved and so did its view of three of its four callees, which moved
    nothing of their own: the slow end is the caller, not one of them."""
    entry, *callees = services
    moves = [
        moved(entry, "latency", score=8),
        *(moved(callee, "edge_latency", score=40, caller=entry) for callee in callees[:3]),
        moved(entry, "client_latency", score=30),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, callee) for callee in callees])

    assert ranked[0].subject == entry
    assert ranked[0].lead.role == "latency"
    assert callees[0] not in [c.subject for c in ranked]


@fan_out_worlds
def test_one_slow_callee_seen_from_its_caller_stays_the_first_candidate(services):
    """One edge of four moved: a callee's network delay, not its caller's."""
    entry, slow, *_ = services
    callees = services[1:]
    moves = [moved(entry, "latency", score=8), moved(slow, "edge_latency", score=40, caller=entry)]

    ranked = candidates_ranked(moves, edges=[(entry, callee) for callee in callees])

    assert ranked[0].subject == slow


@fan_out_worlds
def test_edges_to_callees_whose_own_latency_moved_stay_theirs(services):
    entry, first, second, *_ = services
    callees = services[1:]
    moves = [
        moved(entry, "latency", score=8),
        moved(first, "latency", score=30),
        moved(second, "latency", score=25),
        *(moved(callee, "edge_latency", score=40, caller=entry) for callee in (first, second)),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, callee) for callee in callees])

    assert ranked[0].subject in (first, second)
    assert ranked[-1].subject == entry


@fan_out_worlds
def test_the_network_into_a_callee_that_got_slower_for_its_callers_is_the_callees(services):
    """Two callers see the callee slower while the callee's own view stays flat: the time is spent
    between them, on the callee's network; the callers' own latency follows."""
    entry, middle, slow, *_ = services
    moves = [
        moved(entry, "latency", score=30),
        moved(middle, "latency", score=20),
        moved(slow, "edge_network", score=200, caller=entry),
        moved(slow, "edge_network", score=150, caller=middle),
        moved(slow, "edge_latency", score=10, caller=entry),
        moved(slow, "edge_latency", score=10, caller=middle),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle), (entry, slow), (middle, slow)])

    assert ranked[0].subject == slow
    assert ranked[0].lead.role == "edge_network"
    assert set(ranked[0].explains) == {entry, middle}


@fan_out_worlds
def test_a_callers_network_to_most_of_its_callees_is_its_own(services):
    entry, *callees = services
    moves = [
        moved(entry, "latency", score=8),
        *(moved(callee, role, score=40, caller=entry) for callee in callees[:3] for role in ("edge_network", "edge_latency")),
    ]  # fmt: skip

    ranked = candidates_ranked(moves, edges=[(entry, callee) for callee in callees])

    assert [c.subject for c in ranked] == [entry]


@per_world
def test_a_network_that_got_faster_is_no_symptom(services):
    entry, middle, _ = services
    moves = [
        moved(middle, "edge_network", score=80, caller=entry, falling=True),
        moved(entry, "cpu", score=5),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [entry]


@per_world
def test_a_network_delay_its_caller_does_not_see_slower_is_none(services):
    """The caller's view grew against the callee's, but the call did not get slower for the caller."""
    entry, middle, _ = services
    moves = [moved(middle, "edge_network", score=80, caller=entry), moved(entry, "cpu", score=5)]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [entry]


@per_world
def test_a_network_delay_whose_caller_saw_the_calls_slower_without_a_move_of_their_own_is_the_callees(
    services,
):
    """The caller's view rose with the gap, though too little against its own noise to move."""
    entry, middle, _ = services
    moves = [moved(middle, "edge_network", score=80, caller=entry), moved(entry, "cpu", score=5)]

    ranked = candidates_ranked(moves, edges=[(entry, middle)], seen_slower={(entry, middle): 0.01})

    assert [c.subject for c in ranked] == [middle, entry]


@per_world
@pytest.mark.parametrize("waited, first", [(2.0, "callee"), (0.05, "other")], ids=["seconds", "milliseconds"])
def test_a_gap_its_caller_waits_seconds_longer_on_outranks_another_services_larger_moves(
    services, waited, first
):
    """A lightly loaded edge's gap moves few spreads of its noisy ratio, yet its caller waits 2 s longer:
    that delay on the way outweighs another service's two larger moves. 50 ms longer does not."""
    entry, middle, leaf = services
    moves = [
        moved(middle, "edge_network", score=10, caller=entry),
        moved(leaf, "latency", score=30),
        moved(leaf, "operations", score=30),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)], seen_slower={(entry, middle): waited})

    assert ranked[0].subject == {"callee": middle, "other": leaf}[first]


@per_world
def test_a_service_that_got_faster_counts_for_less_than_one_that_got_slower(services):
    _, middle, leaf = services
    moves = [moved(leaf, "latency", score=40, falling=True), moved(middle, "latency", score=20)]

    ranked = candidates_ranked(moves)

    assert [c.subject for c in ranked] == [middle, leaf]


@per_world
def test_a_callee_whose_only_earlier_move_is_its_traffic_explains_no_caller(services):
    """Traffic follows callers: a callee sending more bytes a few minutes before is no symptom that
    could have made its caller slow, nor the earliest one."""
    entry, middle, _ = services
    moves = [moved(entry, "latency", score=20), moved(middle, "network_transmit", score=20, minute=-3)]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [entry, middle]
    assert ranked[1].explains == []


@fan_out_worlds
def test_a_gap_on_one_of_the_edges_into_a_callee_is_not_its_network(services):
    """Four callers called the busy callee in the window; one saw the gap grow (a few slow calls), the
    others saw nothing: the callee's network is not slow, and the service whose CPU moved leads."""
    busy, *callers = services
    moves = [
        moved(busy, "edge_network", score=300, caller=callers[0]),
        moved(busy, "edge_latency", score=10, caller=callers[0]),
        moved(callers[-1], "cpu", score=60),
    ]
    seen = [(caller, busy) for caller in callers]

    ranked = candidates_ranked(moves, edges=seen, gaps_seen=seen)
    gapless = candidates_ranked(moves, edges=seen)

    assert ranked[0].subject == callers[-1]
    assert all(move.role != "edge_network" for c in ranked for move in c.moves)
    assert gapless[0].subject == busy


@fan_out_worlds
def test_a_gap_on_half_the_edges_into_a_callee_seen_is_its_network(services):
    slow, *callers = services
    moves = [
        *(moved(slow, role, score=300, caller=caller) for caller in callers[:2] for role in ("edge_network", "edge_latency")),
        moved(callers[0], "latency", score=60),
    ]  # fmt: skip
    seen = [(caller, slow) for caller in callers]

    ranked = candidates_ranked(moves, edges=seen, gaps_seen=seen)

    assert ranked[0].subject == slow
    assert ranked[0].lead.role == "edge_network"


@per_world
def test_a_callee_as_early_as_the_caller_it_explains_outranks_its_larger_latency_and_probes(services):
    """A caller waiting on its callee (a lock the callee holds): its latency, and its probes' (they
    wait too), rose in the same minute as the callee's one symptom and by far more; the callee
    explains them, and the earliness is the callee's alone."""
    _, caller, callee = services
    moves = [
        moved(caller, "latency", score=400),
        moved(caller, "probe_latency", score=60, caller="prober"),
        moved(callee, "latency", score=20),
    ]

    ranked = candidates_ranked(moves, edges=[(caller, callee)])

    assert [c.subject for c in ranked] == [callee, caller]
    assert ranked[0].explains == [caller]
    assert candidates_ranked(moves)[0].subject == caller


@per_world
def test_a_caller_whose_cpu_fell_while_it_waited_on_its_callee_is_explained_by_it(services):
    _, caller, callee = services
    moves = [
        moved(caller, "latency", score=400),
        moved(caller, "cpu", score=8, falling=True),
        moved(callee, "latency", score=20),
    ]

    ranked = candidates_ranked(moves, edges=[(caller, callee)])

    assert [c.subject for c in ranked] == [callee, caller]
    assert ranked[0].explains == [caller]


@per_world
def test_an_operations_share_that_moved_is_the_services_own_not_its_callees(services):
    _, middle, leaf = services
    # The middle service stopped running one of its operations (its code returns early) as its callee
    # got a little slower: the path is its own, either way the share moved.
    moves = [
        moved(middle, "operations", score=30, falling=True),
        moved(leaf, "latency", score=6, minute=-1),
    ]

    ranked = candidates_ranked(moves, edges=[(middle, leaf)])

    assert [c.subject for c in ranked] == [middle, leaf]
    assert ranked[1].explains == []


@per_world
def test_an_operations_share_that_moved_after_its_caller_moved_follows_the_caller(services):
    entry, middle, _ = services
    # The entry's code changed what it asks its callee for: the callee's mix of operations follows.
    moves = [
        moved(entry, "operations", score=10),
        moved(middle, "operations", score=30),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [entry, middle]


@per_world
def test_a_caller_whose_calls_to_a_callee_stopped_outranks_the_callees_that_idled(services):
    entry, middle, leaf = services
    # The middle service's code fails before it calls the leaf: the leaf's traffic stops and its CPU
    # idles; the middle's own latency moved a little.
    stopped = moved(leaf, "requests", score=20)
    stopped = Moved(service=leaf, role="requests", change=replace(stopped.change, before=0.3, after=0.0))
    moves = [stopped, moved(leaf, "cpu", score=20, falling=True), moved(middle, "latency", score=6)]

    ranked = candidates_ranked(moves, edges=[(entry, middle), (middle, leaf)])

    assert [c.subject for c in ranked] == [middle, leaf]


@per_world
def test_a_caller_whose_own_traffic_stopped_too_gains_nothing_from_its_callees_stopping(services):
    entry, middle, leaf = services

    def stopped(service: str) -> Moved:
        change = replace(moved(service, "requests", score=20).change, before=0.3, after=0.0)
        return Moved(service=service, role="requests", change=change)

    # The middle service's callers stopped sending: it left its callee for their reasons.
    moves = [stopped(middle), moved(leaf, "cpu", score=20, falling=True), moved(middle, "latency", score=6)]
    graph = [(entry, middle), (middle, leaf)]

    with_leaf_stopped = candidates_ranked([*moves, stopped(leaf)], edges=graph)
    without = candidates_ranked(moves, edges=graph)

    score = {c.subject: c.score for c in with_leaf_stopped}
    assert score[middle] == next(c.score for c in without if c.subject == middle)


@per_world
def test_a_callee_its_caller_stopped_after_explains_the_callers_mix_and_calls(services):
    entry, middle, _ = services
    moves = [
        # The entry's own mix of operations and calls moved more than the callee's one move.
        moved(entry, "operations", score=60),
        moved(entry, "trace_calls", score=30),
        moved(middle, "trace_answered", score=9, caller=entry),
    ]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [middle, entry]
    assert ranked[0].explains == [entry]
    # Without the traces' word on what the entry stopped after, its own moves lead.
    unanswered = [replace(m, role="trace_calls", caller="") if m.service == middle else m for m in moves]
    assert candidates_ranked(unanswered, edges=[(entry, middle)])[0].subject == entry


@per_world
def test_a_callees_own_calls_follow_any_caller_that_moved_in_the_incident(services):
    entry, middle, _ = services
    # The callee's calls are compared over the incident: their onset is its start, before the
    # caller's first minute; the caller still explains them.
    moves = [moved(entry, "cpu", score=10, minute=2), moved(middle, "trace_calls", score=30)]

    ranked = candidates_ranked(moves, edges=[(entry, middle)])

    assert [c.subject for c in ranked] == [entry, middle]
    alone = candidates_ranked(moves, edges=[])
    assert [c.subject for c in alone] == [middle, entry]


@per_world
def test_an_incident_wide_move_does_not_make_a_service_the_earliest(services):
    entry, middle, _ = services
    # The callee's latency rose a minute after the caller's; its calls, compared over the incident,
    # carry the incident's start as onset, which is no evidence it moved first.
    moves = [
        moved(entry, "latency", score=20, minute=1),
        moved(middle, "latency", score=20, minute=2),
        moved(middle, "trace_answered", score=4, caller="elsewhere"),
    ]

    ranked = {c.subject: c for c in candidates_ranked(moves, edges=[])}

    assert ranked[middle].onset == T0 + timedelta(minutes=2)
    assert ranked[entry].score > moved(entry, "latency", score=20).weight


@per_world
def test_error_lines_from_none_outrank_a_larger_latency_move_of_another_service(services):
    """A service that had no error lines and now writes some began failing; an unrelated service's
    latency quantile moved further (a flat baseline's spread is small)."""
    _, middle, leaf = services
    errors = moved(leaf, "log_errors", score=6)
    errors = replace(errors, change=replace(errors.change, before=0.0, after=6.0))

    ranked = candidates_ranked([moved(middle, "latency", score=60), errors])

    assert [c.subject for c in ranked] == [leaf, middle]


@per_world
def test_a_burst_over_a_level_of_error_lines_counts_as_before(services):
    _, middle, leaf = services
    errors = moved(leaf, "log_errors", score=6)
    errors = replace(errors, change=replace(errors.change, before=3.0, after=9.0))

    ranked = candidates_ranked([moved(middle, "latency", score=60), errors])

    assert [c.subject for c in ranked] == [middle, leaf]
