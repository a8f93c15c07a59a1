"""An investigation end to end over recorded range results: the plan's bounded queries, how the
services moved, the §23 conclusion with its cited series, and the gatekeeper computing every derived
number again (a changed number fails). Two worlds: a Kubernetes shop and the demo world's names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.asks.slots import slots_verified
from diagnosis.pipeline.derived import derived_failures
from diagnosis.pipeline.facts import FactNames
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import investigated, plan_of, window_of
from diagnosis.pipeline.investigation.logs import LineAddresses
from diagnosis.pipeline.investigation.said import time_said
from diagnosis.pipeline.slot import Slot
from tests.diagnosis.pipeline.asks.support import message
from tools.evidence.series.record import SeriesRecord
from tools.signal_roles import MetricFamily

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
START = NOW - timedelta(minutes=5)
LABELS = {
    "container_cpu_usage_seconds_total": ("namespace", "pod", "service"),
    "http_server_request_duration_seconds": ("service", "quantile"),
    "traces_service_graph_request_total": ("client", "server"),
}
FAMILIES = (
    MetricFamily("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds."),
    MetricFamily(
        "http_server_request_duration_seconds", "summary", "Duration of requests the server handled."
    ),
    MetricFamily(
        "traces_service_graph_request_total", "counter", "Total count of requests between two nodes."
    ),
    MetricFamily("go_goroutines", "gauge", "Number of goroutines that currently exist."),
)
WORLDS = {
    "shop": ("storefront", "checkout", "billing-db"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())


def plan():
    window = window_of(now=NOW, start=START)
    asked = []

    def label_names(metric: str) -> frozenset[str]:
        asked.append(metric)
        return frozenset(
            LABELS.get(metric.removesuffix("_total") + ("_total" if metric.endswith("_total") else ""), ())
        )

    made = plan_of(
        FAMILIES, window=window, service_labels=("service",), series=set(LABELS), label_names=label_names
    )
    return made, asked


def values(before: float, after: float, *, noise: float) -> list[list]:
    """A point every 30 s over the range: `before` (± noise) until the start, then `after`."""
    points = []
    at = NOW - timedelta(minutes=35)
    index = 0
    while at <= NOW:
        level = after if at >= START + timedelta(seconds=30) else before + (noise if index % 2 else -noise)
        points.append([at.timestamp(), str(level)])
        at += timedelta(seconds=30)
        index += 1
    return points


def range_result(invocation_id: int, query: str, minutes: int, series: list[tuple[dict, list]]) -> object:
    records = [{"metric": metric, "values": points} for metric, points in series]
    texts = [SeriesRecord.model_validate(record).ref_text() for record in records]
    return message(
        invocation_id,
        "query_promql",
        "series",
        records,
        texts,
        arguments={"query": query, "minutes": minutes},
    )


def recorded(services: tuple[str, str, str]):
    """The plan's results: the leaf's CPU jumped, the middle's latency followed; the graph links them."""
    entry, middle, leaf = services
    made, _ = plan()
    cpu, latency = made.signals
    minutes = made.window.minutes
    results = [
        range_result(11, cpu.query, minutes, [
            ({"service": entry}, values(0.20, 0.21, noise=0.01)),
            ({"service": middle}, values(0.10, 0.10, noise=0.01)),
            ({"service": leaf}, values(0.05, 0.80, noise=0.005)),
        ]),
        range_result(12, latency.query, minutes, [
            ({"service": middle, "quantile": "0.99"}, values(0.120, 0.900, noise=0.01)),
            ({"service": entry, "quantile": "0.99"}, values(0.300, 0.310, noise=0.02)),
        ]),
    ]  # fmt: skip
    edges = [({"client": entry, "server": middle}, 120.0), ({"client": middle, "server": leaf}, 80.0)]
    records = [{"metric": metric, "value": [NOW.timestamp(), str(count)]} for metric, count in edges]
    results.append(
        message(
            13,
            "query_promql",
            "series",
            records,
            [SeriesRecord.model_validate(r).ref_text() for r in records],
            arguments={"query": made.edges[0].query(minutes), "minutes": 0},
        )
    )
    return made, results


def test_the_plan_asks_labels_only_of_families_that_may_be_signals_and_reads_each_once():
    made, asked = plan()

    assert [s.role for s in made.signals] == ["cpu", "latency"]
    assert "go_goroutines" not in asked
    assert made.calls() == [
        ("query_promql", {"query": "sum by (service) (rate(container_cpu_usage_seconds_total[3m]))", "minutes": 35}),
        ("query_promql", {"query": "max by (service, quantile) (http_server_request_duration_seconds)", "minutes": 35}),
        ("query_promql", {"query": "sum by (client, server) (increase(traces_service_graph_request_total[35m]))", "minutes": 0}),
    ]  # fmt: skip


def test_fifty_services_are_read_by_at_most_sixty_queries():
    families = [
        MetricFamily(f"svc_{i}_requests_total", "counter", "Requests served.", ("service",))
        for i in range(50)
    ]
    families += [
        MetricFamily("traces_service_graph_request_total", "counter", "requests", ("client", "server"))
    ]

    made = plan_of(
        families,
        window=window_of(now=NOW, start=START),
        service_labels=("service",),
        series=(),
        label_names=None,
    )

    assert len(made.calls()) <= 60


@per_world
def test_the_service_whose_cpu_moved_first_is_the_first_candidate_with_its_numbers(services):
    _entry, middle, leaf = services
    made, results = recorded(services)

    investigation = investigated(made, results, services=set(services))
    said = candidates_said(investigation)

    assert [c.subject for c in investigation.candidates][:2] == [leaf, middle]
    # Times are said in the tools' local time (TIME_ZONE).
    onset = time_said(START + timedelta(seconds=30))
    assert said.text == (
        f"根因候选：{leaf}（CPU 使用升高，{onset}起，0.05 核 → 0.8 核）；其次：{middle}（延迟升高，{onset}起，120 ms → 900 ms）"
    )
    assert said.bindings[0].raw_path == "$.series[2]" and said.bindings[0].source_invocation_id == 11


@per_world
def test_every_derived_number_is_computed_again_from_the_cited_series(services):
    made, results = recorded(services)
    said = candidates_said(investigated(made, results, services=set(services)))
    slot = Slot.model_construct(
        conclusion=said.text, bindings=said.bindings, derived=said.derived, inference=True
    )

    assert derived_failures(slot, invocations=results) == []

    changed = slot.model_copy(update={"conclusion": said.text.replace("0.8 核", "0.9 核")})
    tampered = [n.model_copy(update={"said": "0.9 核"}) if n.said == "0.8 核" else n for n in said.derived]
    assert derived_failures(changed.model_copy(update={"derived": tampered}), invocations=results)
    assert derived_failures(changed, invocations=results)


def test_a_name_the_sources_do_not_know_is_never_a_candidate():
    made, results = recorded(WORLDS["shop"])

    investigation = investigated(made, results, services={"storefront", "checkout"})

    assert "billing-db" not in [c.subject for c in investigation.candidates]


def test_a_histogram_between_two_services_is_read_by_its_bucket_series_labels():
    """Tempo's service-graph latency is a histogram: its samples are `_bucket` series, whose labels
    (their `le` aside) make it an edge's latency."""
    family = MetricFamily(
        "traces_service_graph_request_server_seconds", "histogram", "Time for a request between two nodes as seen from the server."
    )  # fmt: skip
    asked = []

    def label_names(metric: str) -> frozenset[str]:
        asked.append(metric)
        return frozenset({"client", "server", "le"}) if metric.endswith("_bucket") else frozenset()

    made = plan_of(
        [family],
        window=window_of(now=NOW, start=START),
        service_labels=("service",),
        series={f"{family.name}_bucket", f"{family.name}_count", f"{family.name}_sum"},
        label_names=label_names,
    )

    assert asked == [f"{family.name}_bucket"]
    [signal] = made.signals
    assert (signal.role, signal.caller, signal.by) == ("edge_latency", "client", "server")
    assert signal.query.startswith("histogram_quantile(0.9, sum by (client, server, le) (rate(")


@per_world
def test_the_candidates_are_said_with_their_parts_and_what_they_were_computed_from(services):
    _entry, middle, leaf = services
    made, results = recorded(services)

    investigation = investigated(made, results, services=set(services))
    said = candidates_said(investigation)

    # Every range result read (the graph's too): the llm engine is given the candidates instead.
    assert investigation.read == [11, 12, 13]
    onset = time_said(START + timedelta(seconds=30))
    assert [(c.subject, c.mechanism, c.onset, c.before, c.after) for c in said.candidates] == [
        (leaf, "CPU 使用升高", onset, "0.05 核", "0.8 核"),
        (middle, "延迟升高", onset, "120 ms", "900 ms"),
    ]
    assert [b.source_invocation_id for b in said.candidates[0].bindings] == [11]


# --- Addresses (§23): a probe's target and a scrape target share an address; the probe's series are
# said of the service that owns it, and a target that stopped answering is a move of its own. --------
PROBED_LABELS = {"probe_success": ("job", "instance"), "up": ("job", "instance")}
PROBE = MetricFamily("probe_success", "gauge", "Displays whether or not the probe was a success")
ADDRESS_WORLDS = {"shop": ("prober", "checkout", "storefront"), "demo": ("blackbox", "payment-service", "gateway-service")}  # fmt: skip


@pytest.mark.parametrize("services", ADDRESS_WORLDS.values(), ids=ADDRESS_WORLDS.keys())
def test_a_failing_probe_is_said_of_the_service_whose_target_has_its_address(services):
    prober, upstream, other = services
    made = plan_of(
        (PROBE,),
        window=window_of(now=NOW, start=START),
        service_labels=("service", "job"),
        series=set(PROBED_LABELS),
        label_names=lambda metric: frozenset(PROBED_LABELS.get(metric, ())),
    )
    probe, target = made.signals
    assert probe.query == "sum by (job, instance) (probe_success)"
    assert target.query == "min by (job, instance) (up)"
    minutes = made.window.minutes
    results = [
        range_result(21, probe.query, minutes, [
            ({"job": prober, "instance": "http://127.0.0.1:8081/health"}, values(1, 0, noise=0)),
            ({"job": prober, "instance": "http://127.0.0.1:8082/healthz"}, values(1, 1, noise=0)),
        ]),
        range_result(22, target.query, minutes, [
            ({"job": upstream, "instance": "127.0.0.1:8081"}, values(1, 0, noise=0)),
            ({"job": other, "instance": "127.0.0.1:8082"}, values(1, 1, noise=0)),
            ({"job": prober, "instance": "http://127.0.0.1:8081/health"}, values(1, 1, noise=0)),
        ]),
    ]  # fmt: skip

    investigation = investigated(made, results, services=set(services))

    [candidate] = investigation.candidates
    assert candidate.subject == upstream
    assert {(m.role, m.caller) for m in candidate.moves} == {("probe", prober), ("target", "")}
    said = candidates_said(investigation)
    # The probe's series names the address only: the subject's own target series is cited beside it,
    # and the gatekeeper finds every name and number of the candidate in what it cites.
    assert [(b.source_invocation_id, b.raw_path) for b in said.bindings] == [
        (21, "$.series[0]"),
        (22, "$.series[0]"),
    ]
    slot = Slot.model_construct(
        filled=True, conclusion=said.text, bindings=said.bindings, derived=said.derived, inference=True
    )
    assert slots_verified([slot], invocations=results, names=FactNames.of(services))[0].filled
    alone = slot.model_copy(update={"bindings": said.bindings[:1]})
    assert not slots_verified([alone], invocations=results, names=FactNames.of(services))[0].filled
    onset = time_said(START + timedelta(seconds=30))
    assert said.text in (
        f"根因候选：{upstream}（{prober} 看到的拨测成功下降，{onset}起，1 → 0）",
        f"根因候选：{upstream}（抓取目标在线下降，{onset}起，1 → 0）",
    )


# --- Addresses in lines (§23 "upstream addresses in logs"): a service's lines name an address an
# exporter says its service's series are read from; the caller's latency is then its callee's. -------
SERVED_LABELS = {
    "http_server_request_duration_seconds": ("job", "quantile"),
    "db_oldest_transaction_duration_seconds": ("job", "datname", "server"),
}
SERVED_FAMILIES = (
    MetricFamily("http_server_request_duration_seconds", "summary", "Duration of requests the server handled."),
    MetricFamily("db_oldest_transaction_duration_seconds", "gauge", "Duration of the oldest open transaction."),
)  # fmt: skip
DATABASE_WORLDS = {"shop": ("checkout", "billing-db", "storefront"), "demo": ("order-service", "payment-service", "gateway-service")}  # fmt: skip


def addressed(services: tuple[str, str, str], *, lines: bool):
    """The caller's latency and the database's oldest transaction rose together; with `lines`, the
    caller's error lines name the database's address (the bystander's an address nobody serves)."""
    caller, database, bystander = services
    made = plan_of(
        SERVED_FAMILIES,
        window=window_of(now=NOW, start=START),
        service_labels=("service", "job"),
        series=set(SERVED_LABELS),
        label_names=lambda metric: frozenset(SERVED_LABELS.get(metric, ())),
    )
    made = replace(made, addresses=LineAddresses(labels=("service", "job")))
    latency, oldest = made.signals
    minutes = made.window.minutes
    results = [
        range_result(31, latency.query, minutes, [
            ({"job": caller, "quantile": "0.9"}, values(0.083, 1.24, noise=0.004)),
            ({"job": bystander, "quantile": "0.9"}, values(0.020, 0.021, noise=0.001)),
        ]),
        range_result(32, oldest.query, minutes, [({"job": database}, values(0, 65, noise=0))]),
    ]  # fmt: skip
    served = [{"metric": {"job": database, "server": "10.0.0.5:5432"}, "value": [NOW.timestamp(), "3"]}]
    results.append(
        message(
            33,
            "query_promql",
            "series",
            served,
            [SeriesRecord.model_validate(r).ref_text() for r in served],
            arguments={"query": made.served.query(), "minutes": 0},
        )
    )
    if lines:
        named = [
            {"metric": {"job": caller, "address": "10.0.0.5:5432"}, "values": [[NOW.timestamp(), "12"]]},
            {"metric": {"job": bystander, "address": "10.0.0.9:8080"}, "values": [[NOW.timestamp(), "4"]]},
        ]
        results.append(
            message(
                34,
                "query_logql",
                "series",
                named,
                [SeriesRecord.model_validate(r).ref_text() for r in named],
                arguments={"query": made.addresses.query, "minutes": minutes},
                source="loki",
            )
        )
    return made, results


def test_the_addresses_served_are_read_from_the_families_naming_them():
    made, _ = addressed(DATABASE_WORLDS["shop"], lines=True)

    assert made.served.query() == "count by (job, server) (db_oldest_transaction_duration_seconds)"
    assert [tool for tool, _ in made.calls()] == ["query_promql"] * 3 + ["query_logql"]
    assert 'sum by (job, address) (count_over_time({job=~".+"} |~ `' in made.addresses.query


@pytest.mark.parametrize("services", DATABASE_WORLDS.values(), ids=DATABASE_WORLDS.keys())
def test_a_service_whose_lines_name_the_address_another_serves_is_explained_by_it(services):
    caller, database, _bystander = services

    alone = investigated(*addressed(services, lines=False), services=set(services))
    investigation = investigated(*addressed(services, lines=True), services=set(services))

    # Without the lines nothing links them: the caller's latency is its own.
    assert not alone.edges
    assert {c.subject for c in alone.candidates} == {caller, database}
    assert all(not c.explains for c in alone.candidates)
    assert list(investigation.edges) == [(caller, database)]
    assert [c.subject for c in investigation.candidates] == [database, caller]
    assert investigation.candidates[0].explains == [caller]
    assert investigation.read == [31, 32, 34, 33]


@per_world
def test_a_service_that_stopped_calling_its_callee_is_said_by_the_calls_it_no_longer_makes(services):
    entry, middle, leaf = services
    window = window_of(now=NOW, start=START)
    families = (
        MetricFamily("http_server_requests_total", "counter", "Total number of requests the server handled."),
        *FAMILIES,
    )
    labels = {**LABELS, "http_server_requests_total": ("service",)}
    made = plan_of(
        families, window=window, service_labels=("service",), series=set(labels),
        label_names=lambda metric: frozenset(labels.get(metric, ())),
    )  # fmt: skip
    requests, latency = (next(s for s in made.signals if s.role == role) for role in ("requests", "latency"))
    minutes = made.window.minutes
    # The middle service fails before it calls the leaf: the leaf is called no more, the middle's own
    # latency barely moved.
    results = [
        range_result(21, requests.query, minutes, [
            ({"service": entry}, values(5.0, 5.0, noise=0.2)),
            ({"service": middle}, values(2.0, 2.0, noise=0.1)),
            ({"service": leaf}, values(0.3, 0.0, noise=0.01)),
        ]),
        range_result(22, latency.query, minutes, [
            ({"service": middle, "quantile": "0.99"}, values(0.120, 0.200, noise=0.01)),
        ]),
    ]  # fmt: skip
    graph = [({"client": entry, "server": middle}, 120.0), ({"client": middle, "server": leaf}, 80.0)]
    records = [{"metric": metric, "value": [NOW.timestamp(), str(count)]} for metric, count in graph]
    results.append(message(
        23, "query_promql", "series", records, [SeriesRecord.model_validate(r).ref_text() for r in records],
        arguments={"query": made.edges[0].query(minutes), "minutes": 0},
    ))  # fmt: skip

    investigation = investigated(made, results, services=set(services))
    said = candidates_said(investigation)

    assert investigation.candidates[0].subject == middle
    onset = time_said(START + timedelta(seconds=30))
    assert said.text.startswith(
        f"根因候选：{middle}（不再调用 {leaf}：其请求量下降，{onset}起，0.3/s → 0/s）"
    )
    assert (said.bindings[0].source_invocation_id, said.bindings[0].raw_path) == (21, "$.series[2]")
    slot = Slot.model_construct(
        conclusion=said.text, bindings=said.bindings, derived=said.derived, inference=True
    )
    assert derived_failures(slot, invocations=results) == []


GRAPH_FAMILIES = (
    FAMILIES[0],
    MetricFamily(
        "traces_service_graph_request_client_seconds", "histogram", "Time for a request between two nodes as seen from the client."
    ),
    MetricFamily(
        "traces_service_graph_request_server_seconds", "histogram", "Time for a request between two nodes as seen from the server."
    ),
)  # fmt: skip


def network_delayed(services: tuple[str, str, str], *, caller_view: tuple[float, float]):
    """The calls from the entry to the middle service as their caller sees them (`caller_view`, before and
    after: noisy, no move of its own), as the callee spends them (flat), and their ratio, which grew; the
    leaf's CPU rose a little."""
    entry, middle, leaf = services
    window = window_of(now=NOW, start=START)

    def label_names(metric: str) -> frozenset[str]:
        if metric.endswith("_bucket"):
            return frozenset({"client", "server", "le"})
        return frozenset(LABELS.get(metric, ()))

    made = plan_of(
        GRAPH_FAMILIES,
        window=window,
        service_labels=("service",),
        series={"container_cpu_usage_seconds_total", *(f"{f.name}_bucket" for f in GRAPH_FAMILIES[1:])},
        label_names=label_names,
    )
    by_role = {(s.role, s.metric): s for s in made.signals}
    pair = {"client": entry, "server": middle}
    series = {
        ("cpu", "container_cpu_usage_seconds_total"): [({"service": leaf}, values(0.10, 0.16, noise=0.005))],
        ("edge_latency", GRAPH_FAMILIES[1].name): [(pair, values(*caller_view, noise=0.1))],
        ("edge_latency", GRAPH_FAMILIES[2].name): [(pair, values(0.2, 0.2, noise=0.01))],
        ("edge_network", GRAPH_FAMILIES[1].name): [(pair, values(1.0, 2.4, noise=0.02))],
    }
    assert set(by_role) == set(series)
    results = [
        range_result(20 + index, by_role[key].query, window.minutes, found)
        for index, (key, found) in enumerate(series.items())
    ]
    return made, results


@per_world
def test_a_gap_that_grew_while_its_caller_saw_the_calls_slower_is_the_callees_network(services):
    """The caller's own view rose without moving three spreads of its noisy baseline: the calls still took
    longer, so the grown gap is a delay on the way to the callee."""
    entry, middle, leaf = services
    made, results = network_delayed(services, caller_view=(0.2, 0.45))

    investigation = investigated(made, results, services=services)

    assert not [m for m in investigation.moved if m.role == "edge_latency"]
    assert investigation.seen_slower == {(entry, middle): pytest.approx(0.25, abs=0.02)}
    assert [c.subject for c in investigation.candidates][:2] == [middle, leaf]


@per_world
@pytest.mark.parametrize(
    "caller_view", [(0.45, 0.2), (0.2, 0.22)], ids=["fell", "rose-less-than-half-the-gap"]
)
def test_a_gap_that_grew_while_its_caller_saw_the_calls_no_slower_says_nothing(services, caller_view):
    """A gap that grew ×2.4 while the caller's view fell, or rose by less than half that (×1.1 where
    √2.4 ≈ 1.55): the calls took no longer for the caller, so the gap is no delay on the way."""
    *_, leaf = services
    made, results = network_delayed(services, caller_view=caller_view)

    investigation = investigated(made, results, services=services)

    assert investigation.seen_slower == {}
    assert [c.subject for c in investigation.candidates] == [leaf]
