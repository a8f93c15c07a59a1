"""An operation's calls in an investigation (read from a sample of traces): a call its spans stopped
making after another callee answered is said of that callee; a call that appeared, or one that
vanished with nothing before it, of the operation's own service; a share is a move only when the two
windows differ past chance. Every share is computed again by the gatekeeper. Two worlds: a shop's
names and the demo world's."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.calls import calls_moved
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import MAX_QUERIES, Plan, investigated, window_of
from diagnosis.pipeline.investigation.said import time_said
from tests.diagnosis.pipeline.asks.support import message
from tests.diagnosis.pipeline.investigation.support import recomputed_failures
from tools.evidence.trace_calls.record import TraceCallsRecord

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
START = NOW - timedelta(minutes=5)
WORLDS = {
    "shop": ("storefront", "pricing", "currency", "ledger"),
    "demo": ("gateway-service", "order-service", "payment-service", "user-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
Shapes = dict[tuple[str, ...], int]


def plan() -> Plan:
    return replace(Plan(window=window_of(now=NOW, start=START), signals=(), edges=()), traces=True)


def operation(service: str, name: str, *, before: Shapes, after: Shapes) -> dict:
    """An operation's record: `before`'s spans in the baseline window, `after`'s in the incident."""
    window = plan().window
    bounds = [(window.baseline_start, window.start), (window.start, window.now)]
    windows = [
        {
            "start": start.timestamp(),
            "end": end.timestamp(),
            "shapes": [{"calls": list(calls), "spans": n} for calls, n in shapes.items()],
        }
        for (start, end), shapes in zip(bounds, (before, after), strict=True)
    ]
    spans = sum(before.values()) + sum(after.values())
    return {"service": service, "operation": name, "spans": spans, "windows": windows}


def calls_result(invocation_id: int, records: list[dict]):
    texts = [TraceCallsRecord.model_validate(r).ref_text() for r in records]
    return message(
        invocation_id,
        "query_trace_calls",
        "operations",
        records,
        texts,
        arguments={"minutes": plan().window.minutes},
        source="tempo",
    )


def moved(record: dict):
    return calls_moved(TraceCallsRecord.model_validate(record))


@per_world
def test_calls_that_stopped_after_a_callee_answered_are_said_of_that_callee(services):
    entry, quoting, converting, _ = services
    quote, convert = f"{quoting} Quote", f"{converting} Convert"
    record = operation(
        entry, "POST /checkout", before={(quote, convert): 20}, after={(quote, convert): 2, (quote,): 18}
    )
    investigation = investigated(plan(), [calls_result(41, [record])], services=services)
    said = candidates_said(investigation)
    assert said.text == (
        f"根因候选：{quoting}（{entry}「POST /checkout」调用它（Quote）后再调用 {converting} 的占比下降，"
        f"{time_said(START)}起，100% → 10%）"
    )
    assert said.bindings[0].raw_path == "$.operations[0]"
    as_said, changed = recomputed_failures(said, [calls_result(41, [record])], after="10%", changed_to="12%")
    assert as_said == []
    assert changed == ["12%：按引用的区间结果重算为 10%"]


@per_world
def test_a_call_that_appeared_is_the_operations_own_services(services):
    entry, quoting, _, auditing = services
    quote, audit = f"{quoting} Quote", f"{auditing} Audit"
    record = operation(
        entry, "POST /checkout", before={(quote,): 20}, after={(quote,): 10, (quote, audit): 10}
    )
    move = moved(record)
    assert (move.service, move.calls, move.given) == (entry, (audit,), "")
    assert (move.change.before, move.change.after) == (0.0, 0.5)


@per_world
def test_a_call_that_vanished_with_nothing_before_it_is_the_operations_own_services(services):
    entry, _, converting, _ = services
    convert = f"{converting} Convert"
    record = operation(entry, "GET /price", before={(convert,): 20}, after={(): 20})
    move = moved(record)
    assert (move.service, move.calls, move.given) == (entry, (convert,), "")
    assert (move.change.before, move.change.after) == (1.0, 0.0)


@per_world
def test_a_share_within_chance_or_of_few_spans_is_no_move(services):
    entry, quoting, converting, _ = services
    quote, convert = f"{quoting} Quote", f"{converting} Convert"
    # 60 % → 45 % of 60 spans a window: a shift past MIN_SHIFT's reach is not, and within chance.
    wobbling = operation(
        entry, "GET /a", before={(quote, convert): 12, (quote,): 8}, after={(quote, convert): 9, (quote,): 11}
    )
    # Every call gone, but of four spans before and after.
    few = operation(entry, "GET /b", before={(quote,): 4}, after={(): 4})
    # Read in the incident only.
    unread = operation(entry, "GET /c", before={}, after={(convert,): 20})
    unread["windows"] = unread["windows"][1:]
    assert moved(wobbling) is None
    assert moved(few) is None
    assert moved(unread) is None


@per_world
def test_the_traces_call_is_one_within_the_bound_and_read_only_when_planned(services):
    entry, quoting, converting, _ = services
    record = operation(entry, "GET /c", before={(f"{converting} Convert",): 20}, after={(): 20})
    made = plan()
    assert made.calls() == [("query_trace_calls", {"minutes": made.window.minutes, "incident_minutes": 5})]
    assert len(made.with_patterns(service_label="app", services=[f"s{i}" for i in range(80)]).calls()) == (
        MAX_QUERIES
    )
    unplanned = replace(made, traces=False)
    assert investigated(unplanned, [calls_result(42, [record])], services=services).candidates == []
    assert quoting not in [
        c.subject for c in investigated(made, [calls_result(42, [record])], services=services).candidates
    ]


@per_world
def test_an_operation_whose_own_step_moved_is_explained_by_that_step(services):
    entry, pricing, converting, auditing = services
    # The entry's order step stops after pricing answered; the order itself, which runs that step,
    # stops auditing: the inner step says where the early return came from.
    step = operation(
        entry,
        "PrepareOrder",
        before={(f"{pricing} Quote", f"{converting} Convert"): 20},
        after={(f"{pricing} Quote",): 20},
    )
    order = operation(
        entry,
        "PlaceOrder",
        before={(f"{entry} PrepareOrder", f"{auditing} Audit"): 20},
        after={(f"{entry} PrepareOrder",): 20},
    )

    investigation = investigated(plan(), [calls_result(43, [order, step])], services=services)

    assert [(m.service, m.role) for m in investigation.moved] == [(pricing, "trace_answered")]
    assert investigation.moved[0].caller == entry
    assert [c.subject for c in investigation.candidates] == [pricing]
    # The traces show who calls whom.
    assert {(entry, pricing), (entry, converting), (entry, auditing)} <= set(investigation.edges)


@per_world
def test_a_step_of_the_services_own_is_named_by_its_operation(services):
    entry, pricing, _, _ = services
    record = operation(
        entry,
        "POST /cart",
        before={(f"{pricing} Quote",): 20},
        after={(f"{pricing} Quote", f"{entry} Cart.Fallback"): 20},
    )

    said = candidates_said(investigated(plan(), [calls_result(44, [record])], services=services))

    assert said.text.startswith(
        f"根因候选：{entry}（{entry}「POST /cart」调用 「Cart.Fallback」 的占比升高，"
    )
    assert recomputed_failures(said, [calls_result(44, [record])], after="100%", changed_to="90%")[0] == []
