"""Line patterns in an investigation: each service's patterns (one query a service, as many services
as the bound leaves room for) read against the baseline; a pattern a service stopped writing, or
started writing, while it wrote others is a move of that service, a count that only followed the
traffic is not. Two worlds: a Kubernetes shop and the demo world's names."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.conclusion import candidates_said, searched_said
from diagnosis.pipeline.investigation.investigate import MAX_QUERIES, Plan, investigated, window_of
from diagnosis.pipeline.investigation.logs import log_errors_signal
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


def plan(services: tuple[str, ...]) -> Plan:
    made = Plan(window=window_of(now=NOW, start=START), signals=(), edges=())
    return made.with_patterns(service_label="app", services=services)


def per_minute(before: int, after: int) -> list[list]:
    """A count a minute: `before` until a minute after the start, then `after`."""
    points, at = [], NOW - timedelta(minutes=35)
    while at <= NOW:
        points.append([at.timestamp(), str(after if at >= START + timedelta(minutes=1) else before)])
        at += timedelta(minutes=1)
    return points


def patterns_result(invocation_id: int, made: Plan, service: str, patterns: dict[str, list[list]]):
    selector = f'{{app="{service}"}}'
    records = [{"metric": {"app": service, "pattern": text}, "values": v} for text, v in patterns.items()]
    return message(
        invocation_id,
        "query_log_patterns",
        "series",
        records,
        [SeriesRecord.model_validate(r).ref_text() for r in records],
        arguments={"query": selector, "minutes": made.window.minutes},
        source="loki",
    )


def recorded(services: tuple[str, str, str], made: Plan) -> list:
    """The leaf stopped writing its 'saved' line (an exception before it) and still writes the
    rest; its caller's traffic doubled (every pattern twice as often); the entry kept on."""
    entry, middle, leaf = services
    return [
        patterns_result(31, made, entry, {"<_> GET /cart <_>": per_minute(20, 20)}),
        patterns_result(32, made, middle, {"<_> INFO checkout <_> placed": per_minute(10, 20)}),
        patterns_result(
            33,
            made,
            leaf,
            {
                "<_> INFO charge <_> received": per_minute(12, 12),
                "<_> INFO charge <_> saved": per_minute(12, 0),
            },
        ),
    ]


@per_world
def test_each_services_patterns_are_one_query_each_within_the_bound(services):
    made = plan(services)

    assert made.calls() == [
        ("query_log_patterns", {"query": f'{{app="{service}"}}', "minutes": 35})
        for service in sorted(services)
    ]
    many = Plan(window=made.window, signals=(), edges=(), logs=(log_errors_signal("app"),))
    bounded = many.with_patterns(service_label="app", services=[f"{services[0]}-{i}" for i in range(80)])
    assert len(bounded.calls()) == MAX_QUERIES
    assert bounded.patterns_left_out == 80 - (MAX_QUERIES - 1)


@per_world
def test_a_pattern_the_service_stopped_writing_makes_it_the_candidate(services):
    _entry, _middle, leaf = services
    made = plan(services)

    investigation = investigated(made, recorded(services, made), services=set(services))
    said = candidates_said(investigation)

    # The caller's doubled line is traffic, not a new path: no move.
    assert [c.subject for c in investigation.candidates] == [leaf]
    onset = time_said(START + timedelta(minutes=1))
    assert said.text.startswith(
        f"根因候选：{leaf}（日志模式「<_> INFO charge <_> saved」消失，{onset}起，12 条/分钟 → 0 条/分钟）"
    )
    assert said.bindings[0].source_invocation_id == 33 and said.bindings[0].raw_path == "$.series[1]"


@per_world
def test_a_pattern_a_caller_starts_writing_after_its_callee_changed_is_explained_by_the_callee(services):
    entry, middle, leaf = services
    made = replace(
        plan(services), edges=(EdgeSignal("traces_service_graph_request_total", "client", "server"),)
    )
    results = recorded(services, made)
    results[1] = patterns_result(
        32,
        made,
        middle,
        {
            "<_> INFO checkout <_> placed": per_minute(10, 10),
            "<_> ERROR charge failed <_>": per_minute(0, 30),
        },
    )
    edges = [
        {"metric": {"client": entry, "server": middle}, "value": [NOW.timestamp(), "50"]},
        {"metric": {"client": middle, "server": leaf}, "value": [NOW.timestamp(), "40"]},
    ]
    results.append(message(
        34, "query_promql", "series", edges, [SeriesRecord.model_validate(r).ref_text() for r in edges],
        arguments={"query": made.edges[0].query(made.window.minutes), "minutes": 0},
    ))  # fmt: skip

    investigation = investigated(made, results, services=set(services))

    assert [c.subject for c in investigation.candidates] == [leaf, middle]
    assert investigation.candidates[0].explains == [middle]


@per_world
def test_every_number_of_a_pattern_candidate_is_computed_again_from_the_cited_series(services):
    made = plan(services)
    results = recorded(services, made)
    said = candidates_said(investigated(made, results, services=set(services)))
    as_said, changed = recomputed_failures(said, results, after="0 条/分钟", changed_to="5 条/分钟")

    assert as_said == []
    assert changed


def test_services_whose_patterns_the_bound_left_unread_are_said_when_nothing_moved():
    many = Plan(window=window_of(now=NOW, start=START), signals=(), edges=(), logs=(log_errors_signal("app"),))
    bounded = many.with_patterns(service_label="app", services=[f"shard-{i}" for i in range(70)])

    said = searched_said(investigated(bounded, [], services=set()))

    assert said.endswith(f"另有 {70 - (MAX_QUERIES - 1)} 项（指标族或服务的日志模式）超出查询上限未读取")
