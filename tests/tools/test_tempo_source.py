"""`query_trace_calls` and `query_trace_paths` from Tempo, against the Tempo-HTTP-API stand-in: which
calls each operation's spans made, per minute, over a bounded sample of the window's traces; and which
step (a span's start, a line written in a span) came right after each step of a trace. Two worlds: a
shop's service names and the demo world's."""

from __future__ import annotations

from datetime import datetime

import pytest

from diagnosis.evaluation.tempo import SpanEvent, TempoServer, TempoSpan
from tests.tools.support import record
from tools.sources.http import SourceError
from tools.sources.tempo import (
    MINUTE_NS,
    TempoSource,
    event_step,
    fair_shares,
    operation_calls,
    path_steps,
    spread_sample,
    topped_up,
)
from tools.sources.tempo import Span as ReadSpan
from tools.sources.tempo import trace_spans as spans_read

pytestmark = pytest.mark.django_db
WORLDS = {
    "shop": ("storefront", "pricing", "currency"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
MS = 10**6


@pytest.fixture
def session():
    from tests.factories import DiagnosisSessionFactory

    return DiagnosisSessionFactory()


def checkout_trace(trace_id: str, services: tuple[str, str, str], *, at_ns: int, converted: bool) -> list:
    """The entry's `POST /checkout` asks the quoting service for a quote (a client span in the entry,
    the server span under it), then, when `converted`, calls the currency service directly."""
    entry, quoting, converting = services
    spans = [
        TempoSpan(trace_id, "a", "", entry, "POST /checkout", at_ns, at_ns + 50 * MS),
        TempoSpan(trace_id, "b", "a", entry, "Quote", at_ns + MS, at_ns + 10 * MS),
        TempoSpan(trace_id, "c", "b", quoting, "Quote", at_ns + 2 * MS, at_ns + 9 * MS),
    ]
    if converted:
        spans.append(TempoSpan(trace_id, "d", "a", converting, "Convert", at_ns + 11 * MS, at_ns + 20 * MS))
    return spans


@per_world
def test_each_operation_says_per_minute_which_calls_its_spans_made_named_by_who_served_them(
    settings, session, services
):
    entry, quoting, converting = services
    now = datetime.now().astimezone().replace(microsecond=0)
    split = int(now.timestamp()) - 60
    # Two traces in the baseline (minutes before), three in the incident (the last minute), two of
    # which no longer convert.
    starts = [split - 240, split - 120, split + 10, split + 20, split + 30]
    spans = [
        span
        for index, start in enumerate(starts)
        for span in checkout_trace(f"t{index}", services, at_ns=start * 10**9, converted=index < 3)
    ]
    with TempoServer(spans) as tempo:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"TEMPO_URL": tempo.url, "DEMO_NOW": now.isoformat()}
        invocation = record(session, "query_trace_calls", minutes=10, incident_minutes=1)

    assert (invocation.source, invocation.source_location) == ("tempo", tempo.url)
    [checkout, quote] = invocation.output["operations"]
    assert checkout == {
        "service": entry,
        "operation": "POST /checkout",
        "spans": 5,
        "windows": [
            {
                "start": split - 540,
                "end": split,
                "shapes": [{"calls": sorted([f"{converting} Convert", f"{quoting} Quote"]), "spans": 2}],
            },
            {
                "start": split,
                "end": split + 60,
                "shapes": [
                    {"calls": [f"{quoting} Quote"], "spans": 2},
                    {"calls": sorted([f"{converting} Convert", f"{quoting} Quote"]), "spans": 1},
                ],
            },
        ],
    }
    # The client span calls the quoting service; the spans that call nothing are no operation's calls.
    assert (quote["service"], [window["shapes"] for window in quote["windows"]]) == (
        entry,
        [[{"calls": [f"{quoting} Quote"], "spans": 2}], [{"calls": [f"{quoting} Quote"], "spans": 3}]],
    )
    assert invocation.output["traces_read"] == 5
    assert invocation.evidence_refs[0]["text"] == (
        f"{entry}「POST /checkout」5 个 span 的调用：{quoting} Quote、{converting} Convert"
    )


def test_the_sample_takes_a_fair_share_of_each_minute_spread_across_it():
    busy = [(MINUTE_NS + i * 10**8, f"busy{i}") for i in range(500)]
    quiet = [(2 * MINUTE_NS + i * 10**9, f"quiet{i}") for i in range(10)]

    chosen = spread_sample(busy + quiet, limit=40)

    # The quiet minute's every trace, and what it leaves of its share to the busy one's.
    assert chosen[-10:] == [f"quiet{i}" for i in range(10)]
    # Every 50/3rd of the busy minute's, from its first second to its last.
    assert chosen[:30] == [f"busy{int(i * 500 / 30)}" for i in range(30)]
    assert len(spread_sample(busy * 3, limit=40)) == 40
    # More minutes than traces to read: some minutes have none read.
    assert len(spread_sample(busy + quiet, limit=1)) == 1
    assert spread_sample(busy, limit=0) == []
    # Three traces across a minute's end, three to read: all three.
    assert (
        len(spread_sample([(MINUTE_NS - 10**9, "a"), (MINUTE_NS, "b"), (MINUTE_NS + 1, "c")], limit=3)) == 3
    )


def test_a_trace_in_tempo_1s_shape_is_read_too_and_a_malformed_span_is_left_out():
    trace = {
        "batches": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "ledger"}}]},
                "instrumentationLibrarySpans": [
                    {
                        "spans": [
                            {"spanId": "x", "name": "Post", "startTimeUnixNano": "120000000000"},
                            {"name": "?"},
                        ]
                    }
                ],
            }
        ]
    }

    assert list(spans_read(trace)) == [ReadSpan("x", "", "ledger", "Post", 120 * 10**9)]
    assert operation_calls([(list(spans_read(trace)), {"ledger"})], windows=[(0, 600)]) == []


def test_a_tempo_that_is_down_is_an_error_naming_it(settings):
    source = TempoSource("http://127.0.0.1:9")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"SOURCE_TIMEOUT": 2}

    with pytest.raises(SourceError) as raised:
        source.trace_calls(minutes=5, incident_minutes=1, now=datetime.now())

    assert raised.value.kind == "tempo"
    assert "无法连接" in raised.value.cause


def test_what_a_window_with_few_traces_leaves_of_its_share_goes_to_the_others():
    assert fair_shares([3, 100, 100], budget=60) == [3, 28, 29]
    assert fair_shares([0, 0], budget=60) == [0, 0]
    assert sum(fair_shares([500] * 7, budget=60)) == 60


def line(at_ns: int, place: str, text: str) -> SpanEvent:
    """A line written in a span, with its code place as a log appender records it."""
    namespace, _, number = place.partition("#")
    return SpanEvent(
        at_ns, "log", (("message", text), ("code.namespace", namespace), ("code.lineno", int(number)))
    )


def quote_trace(trace_id: str, services: tuple[str, str, str], *, at_ns: int, priced: bool) -> list:
    """The entry's `POST /checkout` calls the quoting service, whose span writes a line when it reads the
    cart and, when `priced`, one when it priced it; else an error line."""
    entry, quoting, _ = services
    written = [line(at_ns + 3 * MS, "c.q.QuoteService#40", f"cart {trace_id} read")]
    written.append(
        line(at_ns + 4 * MS, "c.q.QuoteService#52", "priced 3 items")
        if priced
        else line(at_ns + 4 * MS, "c.q.QuoteService#77", "ERROR no price for item 12")
    )
    return [
        TempoSpan(trace_id, "a", "", entry, "POST /checkout", at_ns, at_ns + 50 * MS),
        TempoSpan(trace_id, "c", "a", quoting, "Quote", at_ns + 2 * MS, at_ns + 9 * MS, tuple(written)),
    ]


@per_world
def test_each_step_says_per_window_which_step_came_next_in_how_many_traces(settings, session, services):
    entry, quoting, _ = services
    now = datetime.now().astimezone().replace(microsecond=0)
    split = int(now.timestamp()) - 60
    # Two traces in the baseline, three in the incident, two of which fail after reading the cart.
    starts = [split - 240, split - 120, split + 10, split + 20, split + 30]
    spans = [
        span
        for index, start in enumerate(starts)
        for span in quote_trace(f"t{index}", services, at_ns=start * 10**9, priced=index < 3)
    ]
    with TempoServer(spans) as tempo:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"TEMPO_URL": tempo.url, "DEMO_NOW": now.isoformat()}
        invocation = record(session, "query_trace_paths", minutes=10, incident_minutes=1)

    assert (invocation.source, invocation.source_location) == ("tempo", tempo.url)
    steps = {(step["service"], step["step"]): step for step in invocation.output["steps"]}
    read = steps[(quoting, "c.q.QuoteService#40")]
    assert read == {
        "service": quoting,
        "step": "c.q.QuoteService#40",
        "event": True,
        "traces": 5,
        "windows": [
            {
                "start": split - 540,
                "end": split,
                "traces": 2,
                "next": [{"step": f"{quoting} c.q.QuoteService#52", "traces": 2, "event": True}],
            },
            {
                "start": split,
                "end": split + 60,
                "traces": 3,
                "next": [
                    {"step": f"{quoting} c.q.QuoteService#77", "traces": 2, "event": True},
                    {"step": f"{quoting} c.q.QuoteService#52", "traces": 1, "event": True},
                ],
            },
        ],
    }
    # A span's start is a step too, followed by the first line written in it; the last step has none.
    assert steps[(quoting, "Quote")]["windows"][0]["next"] == [
        {"step": f"{quoting} c.q.QuoteService#40", "traces": 2, "event": True}
    ]
    assert steps[(entry, "POST /checkout")]["event"] is False
    assert steps[(quoting, "c.q.QuoteService#52")]["windows"][0]["next"] == []
    assert invocation.output["traces_read"] == 5
    assert f"{quoting}「Quote」在 5 条调用链中之后接：{quoting} c.q.QuoteService#40" in [
        ref["text"] for ref in invocation.evidence_refs
    ]


def test_a_service_few_sampled_traces_reach_gets_more_of_its_own_counted_for_it_only():
    listed = [(minute * MINUTE_NS, f"r{minute}") for minute in range(6)]

    chosen = topped_up(
        ["r0", "c1", "c2"], [("rare", listed), ("common", [(0, "c1"), (0, "c2")])], least=3, budget=10
    )

    # The uniform sample counts for every service; "rare" had one of its traces in it and gets two
    # more of its own (`spread_sample`'s choice); "common" has all of its own already.
    assert chosen == {"r0": None, "c1": None, "c2": None, "r4": {"rare"}, "r5": {"rare"}}


def test_a_trace_added_for_two_services_is_read_once_and_counted_for_both():
    both = [(0, "t1"), (MINUTE_NS, "t2")]

    chosen = topped_up([], [("ledger", both), ("notifier", both)], least=2, budget=10)

    assert chosen == {"t1": {"ledger", "notifier"}, "t2": {"ledger", "notifier"}}


def test_the_traces_added_are_bounded_and_the_rarest_service_is_topped_up_first():
    own = [
        ("ledger", [(0, "c1"), (MINUTE_NS, "l1"), (2 * MINUTE_NS, "l2")]),
        ("notifier", [(0, "n1"), (MINUTE_NS, "n2")]),
    ]

    chosen = topped_up(["c1"], own, least=2, budget=2)

    # The notifier has none of its traces sampled, the ledger one: the notifier's two come first.
    assert chosen == {"c1": None, "n1": {"notifier"}, "n2": {"notifier"}}


@per_world
def test_a_rare_services_steps_are_read_in_all_its_traces_and_the_others_in_the_sample_only(
    settings, session, services, monkeypatch
):
    entry, quoting, _ = services
    # Ten incident traces a second apart, all in one minute (the sample's spread is by minute); the
    # quoting service is in four of them (t0, t3, t6, t9).
    now = datetime.now().astimezone().replace(second=30, microsecond=0)
    split = int(now.timestamp()) - 60
    spans = [
        span
        for index in range(10)
        for span in (
            quote_trace(f"t{index}", services, at_ns=(split + index) * 10**9, priced=False)
            if index % 3 == 0
            else [TempoSpan(f"t{index}", "a", "", entry, "GET /", (split + index) * 10**9, 0)]
        )
    ]
    monkeypatch.setattr("tools.sources.tempo.PATH_TRACES", 4)
    monkeypatch.setattr("tools.sources.tempo.PATH_LEAST", 3)
    with TempoServer(spans) as tempo:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"TEMPO_URL": tempo.url, "DEMO_NOW": now.isoformat()}
        invocation = record(session, "query_trace_paths", minutes=10, incident_minutes=1)

    steps = {(step["service"], step["step"]): step for step in invocation.output["steps"]}
    # The uniform sample (t0, t2, t5, t7, evenly spaced) holds one of its four traces: two more are read.
    assert steps[(quoting, "c.q.QuoteService#40")]["traces"] == 3
    assert invocation.output["traces_read"] == 6
    # The entry's steps stay the uniform sample's: four traces, not the six read.
    assert steps[(entry, "POST /checkout")]["traces"] + steps[(entry, "GET /")]["traces"] == 4


def test_a_step_taken_twice_in_a_trace_counts_that_trace_once():
    twice = [
        ReadSpan("a", "", "ledger", "Post", 100 * 10**9, events=((101 * 10**9, "L#1"), (102 * 10**9, "L#1"))),
    ]

    [written, post] = path_steps([(twice, None)], windows=[(0, 600)])

    assert (post["step"], written["step"], written["traces"]) == ("Post", "L#1", 1)
    assert written["windows"][0]["next"] == [{"step": "ledger L#1", "traces": 1, "event": True}]


def test_a_line_is_named_by_its_code_place_else_by_its_text_with_numbers_and_ids_masked():
    assert (
        event_step("log", {"code.namespace": "c.q.QuoteService", "code.lineno": "52"})
        == "c.q.QuoteService#52"
    )
    assert event_step("log", {"message": "no price for item 12 in cart 9f3e2a71c0"}) == (
        "no price for item <*> in cart <*>"
    )
    # A structured line by its message field, not its pod's host name.
    assert event_step(
        "log", {"message": '{"severity":"info","hostname":"quote-7f9c","message":"quote 12 ok"}'}
    ) == ("quote <*> ok")
    assert event_step("exception", {"exception.type": "java.lang.IllegalStateException"}) == (
        "java.lang.IllegalStateException"
    )
    assert event_step("cache miss", {}) == "cache miss"
    assert len(event_step("log", {"message": "x" * 5000})) == 120
    assert event_step("log", {"message": '{"message":"ok","body":"' + "x" * 5000 + '"}'}).startswith(
        '{"message"'
    )


def test_span_events_are_read_with_their_steps_in_time_order_and_a_timeless_one_left_out():
    trace = {
        "batches": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "ledger"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "spanId": "x",
                                "name": "Post",
                                "startTimeUnixNano": "120000000000",
                                "events": [
                                    {"timeUnixNano": "120000000009", "name": "late"},
                                    {"name": "timeless"},
                                    {
                                        "timeUnixNano": "120000000002",
                                        "name": "log",
                                        "attributes": [
                                            {"key": "code.namespace", "value": {"stringValue": "L"}},
                                            {"key": "code.lineno", "value": {"intValue": "7"}},
                                        ],
                                    },
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }

    [span] = spans_read(trace)

    assert span.events == ((120000000002, "L#7"), (120000000009, "late"))
