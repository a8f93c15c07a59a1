"""The LogQL the Loki source sends for a count: one recipe per format a line is read in, every query
one the Loki test server parses (and Loki's grammar allows), a JSON key that is also a stream label
named as Loki's parser names it."""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from diagnosis.evaluation.logql import parse
from tools.logcounts import CountRequest
from tools.logformats import fields_of
from tools.logql import (
    grouped_query,
    recipe_of,
    slow_count_query,
    slowest_line_query,
    slowest_ms,
    slowest_query,
    stream_selector,
    total_query,
)

STREAMS = json.loads((Path(__file__).parents[1] / "world" / "loki_streams.json").read_text())
LINES = {
    stream["stream"]["service"] + stream["stream"].get("filename", ""): stream["lines"][0]["line"]
    for stream in STREAMS
}


def queries(line: str, measure: str, **request) -> list[str]:
    recipe = recipe_of(fields_of(line), measure)
    counted = CountRequest(measure=measure, minutes=60, service="x", **request)
    selector = stream_selector("service", "x")
    if recipe is None:
        return []
    if measure == "slow":
        return [
            slow_count_query(selector, recipe, counted),
            slowest_query(selector, recipe, counted),
            slowest_line_query(selector, recipe, "2.5"),
        ]
    return [total_query(selector, recipe, counted), grouped_query(selector, recipe, counted)]


@pytest.mark.parametrize("measure", ["slow", "path", "status", "class"])
@pytest.mark.parametrize("line", sorted(LINES.values()), ids=sorted(LINES))
def test_every_query_a_count_sends_parses(line, measure):
    for query in queries(line, measure, status="404" if measure == "path" else ""):
        parse(query)


def test_which_formats_logql_reads_for_which_count():
    readable = {
        key: sorted(measure for measure in ("slow", "path", "status", "class") if queries(line, measure))
        for key, line in LINES.items()
    }

    assert readable["edge-proxy/var/log/nginx/access.log"] == ["path", "slow", "status"]
    assert readable["edge-proxy/var/log/nginx/error.log"] == ["class"]
    # With `%e` in its prefix PostgreSQL writes the SQLSTATE LogQL groups errors by; without, it cannot.
    assert readable["ledger-db/var/log/postgresql/postgresql-15-main.log"] == ["class", "slow"]
    without_sqlstate = "2026-12-02 01:10:06.123 UTC [4242] shop@shop ERROR:  deadlock detected"
    assert not queries(without_sqlstate, "class")
    assert readable["session-cache/var/log/redis/redis-server.log"] == []
    assert readable["payments-gateway"] == ["class", "path", "slow", "status"]


def test_thresholds_are_written_in_the_duration_s_own_unit():
    milliseconds = queries(LINES["ledger-db/var/log/postgresql/postgresql-15-main.log"], "slow")[0]
    seconds = queries(LINES["edge-proxy/var/log/nginx/access.log"], "slow", slower_than_ms=Decimal(1500))[0]
    go = queries(LINES["payments-gateway"], "slow")[0]

    assert "| duration_ms > 1000 |" in milliseconds
    assert "| request_time > 1.5 |" in seconds
    assert "| duration > 1000ms |" in go


def test_the_slowest_comes_back_in_milliseconds():
    go = recipe_of(fields_of(LINES["payments-gateway"]), "slow")
    postgres = recipe_of(fields_of(LINES["ledger-db/var/log/postgresql/postgresql-15-main.log"]), "slow")

    # `unwrap duration(…)` answers seconds; PostgreSQL's `duration_ms` is milliseconds already.
    assert (slowest_ms(go, "5.002"), slowest_ms(postgres, "4105.77")) == (
        Decimal("5002.000"),
        Decimal("4105.77"),
    )


def test_a_key_named_like_a_stream_label_is_counted_by_its_extracted_label():
    line = '{"level":"error","error_type":"TimeoutError","msg":"lookup failed"}'

    recipe = recipe_of(fields_of(line), "class", stream_labels={"service", "level"})

    assert recipe.level == "level_extracted" and recipe.classes == ("error_type",)
