"""A trace's path in an investigation (read from a sample of traces): a line no longer followed by the
one that came after it, or followed by a new one, is said of the service that wrote it; a pair of two
spans' starts, or a share within chance, is no move; every share is computed again by the gatekeeper,
and the path outweighs a callee's error lines it explains nothing of. Two worlds: a shop's names and
the demo world's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.change import Change
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import Plan, investigated, window_of
from diagnosis.pipeline.investigation.paths import path_moved
from diagnosis.pipeline.investigation.ranking import Moved, candidates_ranked
from diagnosis.pipeline.investigation.said import time_said
from tests.diagnosis.pipeline.asks.support import message
from tests.diagnosis.pipeline.investigation.support import recomputed_failures
from tools.evidence.trace_paths.record import TracePathsRecord

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
START = NOW - timedelta(minutes=5)
WORLDS = {
    "shop": ("storefront", "pricing", "currency"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
# Next step → (traces, is a line).
Next = dict[str, tuple[int, bool]]


def plan() -> Plan:
    return replace(Plan(window=window_of(now=NOW, start=START), signals=(), edges=()), paths=True)


def step(service: str, name: str, *, event: bool, before: tuple[int, Next], after: tuple[int, Next]) -> dict:
    """A step's record: of `before[0]` traces in the baseline that took it, how many went on to each
    next step; `after` the same in the incident."""
    window = plan().window
    bounds = [(window.baseline_start, window.start), (window.start, window.now)]
    windows = [
        {
            "start": start.timestamp(),
            "end": end.timestamp(),
            "traces": took,
            "next": [{"step": name, "traces": n, "event": line} for name, (n, line) in following.items()],
        }
        for (start, end), (took, following) in zip(bounds, (before, after), strict=True)
    ]
    return {
        "service": service,
        "step": name,
        "event": event,
        "traces": before[0] + after[0],
        "windows": windows,
    }


def paths_result(invocation_id: int, records: list[dict]):
    texts = [TracePathsRecord.model_validate(r).ref_text() for r in records]
    return message(
        invocation_id,
        "query_trace_paths",
        "steps",
        records,
        texts,
        arguments={"minutes": plan().window.minutes},
        source="tempo",
    )


def moved(record: dict):
    return path_moved(TracePathsRecord.model_validate(record))


@per_world
def test_a_line_no_longer_followed_by_the_next_is_said_of_the_service_that_wrote_it(services):
    _, pricing, _ = services
    record = step(
        pricing,
        "c.p.QuoteService#40",
        event=True,
        before=(100, {f"{pricing} c.p.QuoteService#52": (98, True)}),
        after=(
            100,
            {f"{pricing} c.p.QuoteService#52": (20, True), f"{pricing} c.p.QuoteService#77": (80, True)},
        ),
    )
    results = [paths_result(51, [record])]

    investigation = investigated(plan(), results, services=services)
    said = candidates_said(investigation)

    assert [(m.service, m.role) for m in investigation.moved] == [(pricing, "trace_path")]
    # The new next step moved most (0 → 80 %), the old one fell as far but less surely.
    assert said.text == (
        f"根因候选：{pricing}（「c.p.QuoteService#40」之后接「c.p.QuoteService#77」的占比升高，"
        f"{time_said(START)}起，0% → 80%）"
    )
    assert said.bindings[0].raw_path == "$.steps[0]"
    as_said, changed = recomputed_failures(said, results, after="80%", changed_to="85%")
    assert as_said == []
    assert changed == ["85%：按引用的区间结果重算为 80%"]


@per_world
def test_a_line_of_another_service_now_written_right_after_a_step_is_said_of_the_service_that_wrote_it(
    services,
):
    """After the callee's query span, the caller's error line now comes next: the caller's code went
    another way on what the callee answered, so the move is the caller's, and the mechanism names the
    callee's step by its service."""
    _, caller, callee = services
    record = step(
        callee,
        "SELECT rates",
        event=False,
        before=(100, {f"{callee} c.r.RateRepository#20": (100, True)}),
        after=(
            100,
            {f"{callee} c.r.RateRepository#20": (40, True), f"{caller} c.p.QuoteService#91": (60, True)},
        ),
    )
    results = [paths_result(54, [record])]

    investigation = investigated(plan(), results, services=services)
    said = candidates_said(investigation)

    assert [(m.service, m.role) for m in investigation.moved] == [(caller, "trace_path")]
    assert said.text == (
        f"根因候选：{caller}（{callee}「SELECT rates」之后接「c.p.QuoteService#91」的占比升高，"
        f"{time_said(START)}起，0% → 60%）"
    )
    as_said, _ = recomputed_failures(said, results, after="60%", changed_to="65%")
    assert as_said == []


@per_world
def test_a_pair_of_span_starts_or_a_share_within_chance_or_of_few_traces_is_no_move(services):
    entry, pricing, converting = services
    spans_only = step(
        entry,
        "POST /checkout",
        event=False,
        before=(100, {f"{pricing} Quote": (100, False)}),
        after=(100, {f"{converting} Convert": (100, False)}),
    )
    wobbling = step(
        pricing,
        "c.p.QuoteService#40",
        event=True,
        before=(100, {f"{pricing} c.p.QuoteService#52": (60, True)}),
        after=(100, {f"{pricing} c.p.QuoteService#52": (45, True)}),
    )
    few = step(
        pricing,
        "c.p.QuoteService#52",
        event=True,
        before=(4, {f"{pricing} c.p.QuoteService#60": (4, True)}),
        after=(4, {}),
    )
    assert moved(spans_only) is None
    assert moved(wobbling) is None
    assert moved(few) is None
    # A span's start followed by a line is a line's pair.
    into_line = step(
        pricing,
        "Quote",
        event=False,
        before=(100, {f"{pricing} c.p.QuoteService#40": (100, True)}),
        after=(100, {f"{pricing} c.p.QuoteService#40": (10, True)}),
    )
    assert moved(into_line).calls == (f"{pricing} c.p.QuoteService#40",)


@per_world
def test_a_line_of_its_own_that_vanished_moves_at_fewer_standard_errors_than_any_other_pair(services):
    """65 % of 40 traces → none of 13 is 4.1 standard errors: enough for a line of the step's own service
    that no longer came after it (an exception or an early return between the two), not for the same
    line appearing, nor for another service's line vanishing."""
    _, pricing, converting = services

    def pair(next_step: str, *, before: int, after: int, traces: tuple[int, int] = (40, 13)) -> dict:
        return step(
            pricing,
            "c.p.QuoteService#40",
            event=True,
            before=(traces[0], {next_step: (before, True)}),
            after=(traces[1], {next_step: (after, True)}),
        )

    vanished = moved(pair(f"{pricing} c.p.QuoteService#52", before=26, after=0))
    assert vanished is not None and vanished.change.score == pytest.approx(4.07, abs=0.01)
    assert moved(pair(f"{pricing} c.p.QuoteService#52", before=0, after=26, traces=(13, 40))) is None
    assert moved(pair(f"{converting} c.c.RateService#12", before=26, after=0)) is None


@per_world
def test_the_paths_call_is_read_only_when_planned(services):
    _, pricing, _ = services
    record = step(
        pricing,
        "c.p.QuoteService#40",
        event=True,
        before=(100, {f"{pricing} c.p.QuoteService#52": (100, True)}),
        after=(100, {}),
    )
    made = plan()
    assert made.calls() == [("query_trace_paths", {"minutes": made.window.minutes, "incident_minutes": 5})]
    unplanned = replace(made, paths=False)
    assert investigated(unplanned, [paths_result(52, [record])], services=services).candidates == []


@per_world
def test_a_changed_path_outranks_the_error_lines_of_a_caller_it_explains_nothing_of(services):
    entry, pricing, _ = services
    record = step(
        pricing,
        "c.p.QuoteService#40",
        event=True,
        before=(100, {f"{pricing} c.p.QuoteService#52": (100, True)}),
        after=(100, {f"{pricing} c.p.QuoteService#52": (60, True)}),
    )
    investigation = investigated(plan(), [paths_result(53, [record])], services=services)
    # The entry's error lines went from none to a burst in the same minute, twice the least move.
    errors = Change(
        onset=START,
        before=0.0,
        after=40.0,
        score=6.0,
        level_start=START - timedelta(minutes=30),
        baseline_start=START - timedelta(minutes=30),
        baseline_end=START,
        end=NOW,
    )
    ranked = candidates_ranked([*investigation.moved, Moved(service=entry, role="log_errors", change=errors)])

    assert [c.subject for c in ranked] == [pricing, entry]
