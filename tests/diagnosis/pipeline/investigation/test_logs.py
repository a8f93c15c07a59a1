"""Error-log spikes in an investigation: one LogQL query for every service's error lines a minute,
read against the baseline like any key signal; the service whose errors rose is a candidate citing
the log series, its numbers computed again by the gatekeeper, and a caller whose errors follow it
is explained by it. Two worlds: a Kubernetes shop and the demo world's names. And the addresses
every service's lines name, one query."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.evaluation.logql import NS, Evaluator, parse
from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import Plan, investigated, window_of
from diagnosis.pipeline.investigation.logs import LineAddresses, log_errors_signal
from diagnosis.pipeline.investigation.said import time_said
from diagnosis.pipeline.investigation.signals import EdgeSignal
from tests.diagnosis.pipeline.asks.support import message
from tests.diagnosis.pipeline.investigation.support import recomputed_failures
from tools.evidence.series.record import SeriesRecord

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
START = NOW - timedelta(minutes=5)
WORLDS = {
    "shop": ("storefront", "checkout", "billing-db"),
    "demo": ("gateway-service", "order-service", "payment-service"),
}
per_world = pytest.mark.parametrize("services", WORLDS.values(), ids=WORLDS.keys())


def plan() -> Plan:
    window = window_of(now=NOW, start=START)
    return Plan(window=window, signals=(), edges=(), logs=(log_errors_signal("app"),))


def per_minute(before: int, after: int) -> list[list]:
    """A count a minute over the range: `before` until a minute after the start, then `after`."""
    points, at = [], NOW - timedelta(minutes=35)
    while at <= NOW:
        points.append([at.timestamp(), str(after if at >= START + timedelta(minutes=1) else before)])
        at += timedelta(minutes=1)
    return points


def recorded(services: tuple[str, str, str], made: Plan):
    """The leaf's error lines jumped, its caller's followed less, the entry's stayed."""
    entry, middle, leaf = services
    records = [
        {"metric": {"app": entry}, "values": per_minute(3, 3)},
        {"metric": {"app": middle}, "values": per_minute(0, 6)},
        {"metric": {"app": leaf}, "values": per_minute(0, 24)},
    ]
    logs = message(
        21,
        "query_logql",
        "series",
        records,
        [SeriesRecord.model_validate(r).ref_text() for r in records],
        arguments={"query": made.logs[0].query, "minutes": made.window.minutes},
        source="loki",
    )
    return [logs]


def test_one_query_reads_every_services_error_lines_counting_a_quiet_minute_as_zero():
    made = plan()

    assert made.calls() == [("query_logql", {"query": made.logs[0].query, "minutes": 35})]
    assert made.logs[0].query == (
        'sum by (app) (count_over_time({app=~".+"} |~ `(?i:error|err|fatal|critical|crit|severe|panic)|^E\\d{4} |^F\\d{4} ` [3m]))'
        ' or sum by (app) (count_over_time({app=~".+"} [3m])) * 0'
    )


@per_world
def test_the_service_whose_error_lines_rose_first_is_the_candidate_citing_the_log_series(services):
    _entry, middle, leaf = services
    made = plan()
    results = recorded(services, made)

    investigation = investigated(made, results, services=set(services))
    said = candidates_said(investigation)

    assert [c.subject for c in investigation.candidates] == [leaf, middle]
    onset = time_said(START + timedelta(minutes=1))
    assert said.text.startswith(f"根因候选：{leaf}（错误日志升高，{onset}起，0 条/3分钟 → 24 条/3分钟）")
    assert said.bindings[0].raw_path == "$.series[2]" and said.bindings[0].source_invocation_id == 21


@per_world
def test_a_callers_error_lines_that_follow_its_callee_are_explained_by_it(services):
    entry, middle, leaf = services
    edge = EdgeSignal(metric="traces_service_graph_request_total", caller="client", callee="server")
    made = replace(plan(), edges=(edge,))
    results = recorded(services, made)
    # The caller's errors jump more than the callee's: the call graph still puts the callee first.
    results[0].output()["series"][1]["values"] = per_minute(0, 40)
    results = [message(
        21, "query_logql", "series", results[0].output()["series"],
        [SeriesRecord.model_validate(r).ref_text() for r in results[0].output()["series"]],
        arguments={"query": made.logs[0].query, "minutes": made.window.minutes}, source="loki",
    )]  # fmt: skip
    edges = [
        {"metric": {"client": entry, "server": middle}, "value": [NOW.timestamp(), "50"]},
        {"metric": {"client": middle, "server": leaf}, "value": [NOW.timestamp(), "40"]},
    ]
    results.append(message(
        22, "query_promql", "series", edges, [SeriesRecord.model_validate(r).ref_text() for r in edges],
        arguments={"query": edge.query(made.window.minutes), "minutes": 0},
    ))  # fmt: skip

    investigation = investigated(made, results, services=set(services))

    assert [c.subject for c in investigation.candidates] == [leaf, middle]
    assert investigation.candidates[0].explains == [middle]


@per_world
def test_every_number_of_a_log_candidate_is_computed_again_from_the_cited_series(services):
    made = plan()
    results = recorded(services, made)
    said = candidates_said(investigated(made, results, services=set(services)))
    as_said, changed = recomputed_failures(said, results, after="24 条/3分钟", changed_to="30 条/3分钟")

    assert as_said == []
    assert changed


def test_without_a_log_series_result_nothing_is_said_of_logs():
    made = replace(plan(), logs=())

    assert investigated(made, [], services={"storefront"}).candidates == []


def test_the_first_address_of_a_line_is_counted_by_service_and_a_time_is_no_address():
    lines = {
        "storefront": [
            '2026/11/29 14:59:01 [error] 7#7: *45 connect() failed (111: Connection refused) while connecting to upstream, client: 10.0.0.2, server: , request: "POST /pay HTTP/1.1", upstream: "http://10.0.0.7:8080/pay", host: "10.0.0.3:80"',
            '10.0.0.2 - - [29/Nov/2026:14:59:01 +0000] "POST /pay HTTP/1.1" 502 157 "-" "curl/8.0"',
        ],
        "checkout": [
            'time=2026-11-29T14:59:02Z level=error msg="request failed" upstream=db.shop.svc:5432 error="canceling statement due to lock timeout"',
        ],
    }  # fmt: skip
    at = int(NOW.timestamp()) * NS
    streams = [({"app": app, "filename": "x.log"}, [(at - NS, line) for line in found]) for app, found in lines.items()]
    query = LineAddresses(labels=("service", "app")).query

    counted = Evaluator(streams).vector(parse(query), at)

    assert {tuple(sorted(labels)): value for labels, value in counted.items()} == {
        (("address", "10.0.0.7:8080"), ("app", "storefront")): 1.0,
        (("address", "db.shop.svc:5432"), ("app", "checkout")): 1.0,
    }
