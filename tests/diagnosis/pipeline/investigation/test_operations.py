"""Operations in an investigation: a span counter by service and operation (Tempo's or an OpenTelemetry
collector's span metrics) is read as each operation's share of its service's spans, one query for
every service. A service whose code stopped running one of its operations (or began another) moved;
one whose traffic only grew or fell did not. Two worlds: a Kubernetes shop and the demo world's names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.derived import derived_failures
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import Plan, investigated, window_of
from diagnosis.pipeline.investigation.said import time_said
from diagnosis.pipeline.investigation.signals import KeySignal, key_signal
from diagnosis.pipeline.slot import Slot
from tests.diagnosis.pipeline.asks.support import message
from tests.diagnosis.pipeline.investigation.support import recomputed_failures
from tools.evidence.series.record import SeriesRecord
from tools.signal_roles import MetricFamily

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
START = NOW - timedelta(minutes=5)
WORLDS = {
    "shop": ("storefront", "checkout", "billing-db"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())
SERVICE_LABELS = ("service", "service_name", "app", "job")
TEMPO = MetricFamily(
    "traces_spanmetrics_calls_total",
    "counter",
    "Total count of the spans",
    ("service", "span_name", "span_kind", "status_code"),
)


def operations_signal() -> KeySignal:
    found = key_signal(TEMPO, service_labels=SERVICE_LABELS)
    assert isinstance(found, KeySignal)
    return found


@pytest.mark.parametrize(
    ("family", "by"),
    [
        (TEMPO, "service"),
        (
            MetricFamily(
                "traces_span_metrics_calls_total", "counter", "", ("service_name", "span_name", "span_kind")
            ),
            "service_name",
        ),
    ],
    ids=["tempo", "opentelemetry"],
)
def test_a_span_counter_by_operation_is_read_as_each_operations_share_of_its_service(family, by):
    found = key_signal(family, service_labels=SERVICE_LABELS)

    assert isinstance(found, KeySignal)
    assert (found.role, found.by, found.operation, found.unit) == ("operations", by, "span_name", "share")
    rate = f"rate({family.name}[3m])"
    assert found.query == f"sum by ({by}, span_name) ({rate}) / on ({by}) group_left sum by ({by}) ({rate})"


def test_a_span_counter_without_its_operations_name_is_a_request_count():
    found = key_signal(
        MetricFamily("traces_spanmetrics_calls_total", "counter", "", ("service", "status_code")),
        service_labels=SERVICE_LABELS,
    )

    assert isinstance(found, KeySignal) and found.role == "requests"


def per_minute(before: float, after: float) -> list[list]:
    """A share a minute: `before` until a minute after the start, then `after`."""
    points, at = [], NOW - timedelta(minutes=35)
    while at <= NOW:
        points.append([at.timestamp(), str(after if at >= START + timedelta(minutes=1) else before)])
        at += timedelta(minutes=1)
    return points


def recorded(services: tuple[str, str, str], made: Plan, *, stopped: str = "INSERT charges") -> list:
    """The leaf stopped saving what it received (its code returns before, its `stopped` operation no
    longer runs); the middle service's traffic doubled (the share of each of its operations held);
    the entry kept on."""
    entry, middle, leaf = services
    shares = {
        (entry, "GET /cart"): per_minute(1.0, 1.0),
        (middle, "PlaceOrder"): per_minute(0.4, 0.4),
        (middle, "HTTP POST"): per_minute(0.6, 0.6),
        (leaf, "Charge"): per_minute(0.3, 0.5),
        (leaf, "Refund"): per_minute(0.3, 0.5),
        (leaf, stopped): per_minute(0.4, 0.0),
    }
    records = [
        {"metric": {"service": service, "span_name": operation}, "values": values}
        for (service, operation), values in shares.items()
    ]
    signal = made.signals[0]
    return [
        message(
            41,
            "query_promql",
            "series",
            records,
            [SeriesRecord.model_validate(r).ref_text() for r in records],
            arguments={"query": signal.query, "minutes": made.window.minutes},
        )
    ]


def plan() -> Plan:
    return Plan(window=window_of(now=NOW, start=START), signals=(operations_signal(),), edges=())


@per_world
def test_an_operation_a_service_stopped_running_makes_it_the_candidate(services):
    leaf = services[2]
    made = plan()

    investigation = investigated(made, recorded(services, made), services=set(services))
    said = candidates_said(investigation)

    # The middle service's doubled traffic left every share where it was: no move.
    assert [c.subject for c in investigation.candidates] == [leaf]
    onset = time_said(START + timedelta(minutes=1))
    assert said.text.startswith(f"根因候选：{leaf}（操作「INSERT charges」占比下降，{onset}起，40% → 0%）")
    assert said.bindings[0].source_invocation_id == 41 and said.bindings[0].raw_path == "$.series[5]"


@per_world
def test_every_number_of_an_operations_candidate_is_computed_again_from_the_cited_series(services):
    made = plan()
    results = recorded(services, made)
    said = candidates_said(investigated(made, results, services=set(services)))
    as_said, changed = recomputed_failures(said, results, after="0%", changed_to="10%")

    assert as_said == []
    assert changed


@per_world
def test_a_long_operation_name_is_said_by_its_head_which_the_gatekeeper_finds_in_the_cited_series(services):
    route = "/api/v1/billingservice/charges/{date}/{startStation}/{endStation}/{tripId}"
    made = plan()
    results = recorded(services, made, stopped=route)
    said = candidates_said(investigated(made, results, services=set(services)))
    head = "/api/v1/billingservice/charges/{date}/{startStation}/{endSta…"
    invented = Slot.model_construct(
        conclusion=said.text.replace(head, "/api/v1/billingservice/refunds/{date}/{startStation}…"),
        bindings=said.bindings,
        derived=said.derived,
        inference=True,
    )

    assert f"操作「{head}」占比下降" in said.text
    assert recomputed_failures(said, results, after="0%", changed_to="0%")[0] == []
    assert derived_failures(invented, invocations=results) == [
        "/api/v1/billingservice/refunds/{date}/{startStation}：不在引用的证据或重算的数中"
    ]
