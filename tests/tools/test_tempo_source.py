"""`query_trace_calls` from Tempo, against the Tempo-HTTP-API stand-in: which calls each operation's
spans made, per minute, over a bounded sample of the window's traces. Two worlds: a shop's service
names and the demo world's."""

from __future__ import annotations

from datetime import datetime

import pytest

from diagnosis.evaluation.tempo import TempoServer, TempoSpan
from tests.tools.support import record
from tools.sources.http import SourceError
from tools.sources.tempo import MINUTE_NS, TempoSource, fair_shares, operation_calls, spread_sample
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
