"""The timeline of an investigation's answer: each move its conclusion names is one track over a shared
time axis, normalised to 0..1, with its onset; drawn from the records the move cites, read back from
the recorded results. Two worlds each: a Kubernetes shop and the demo world's names."""

from __future__ import annotations

from datetime import timedelta

import pytest

from diagnosis.pipeline.investigation.conclusion import candidates_said
from diagnosis.pipeline.investigation.investigate import investigated
from diagnosis.pipeline.investigation.timeline import ALERT, LOG, SERIES, timeline_of
from tests.diagnosis.pipeline.asks.support import NOW as ASKS_NOW
from tests.diagnosis.pipeline.asks.support import alert_record, per_world, read
from tests.diagnosis.pipeline.asks.test_cause import (
    cause_of,
    cause_question,
    rising_lines,
    service_alerts,
    started,
)
from tests.diagnosis.pipeline.investigation.test_calls import calls_result, operation
from tests.diagnosis.pipeline.investigation.test_calls import per_world as per_calls_world
from tests.diagnosis.pipeline.investigation.test_calls import plan as calls_plan
from tests.diagnosis.pipeline.investigation.test_investigate import START, recorded
from tests.diagnosis.pipeline.investigation.test_investigate import per_world as per_services


def by_id(results):
    return {result.invocation_id: result for result in results}


@per_services
def test_each_candidate_is_a_track_of_its_cited_series_normalised_with_its_onset(services):
    _entry, middle, leaf = services
    made, results = recorded(services)
    said = candidates_said(investigated(made, results, services=set(services)))

    timeline = timeline_of(said.marks, by_id(results))

    assert [track.kind for track in timeline.tracks] == [SERIES, SERIES]
    assert [track.label.split("（")[0] for track in timeline.tracks] == [leaf, middle]
    assert [track.label for track in timeline.tracks] == said.text.removeprefix("根因候选：").split(
        "；其次："
    )
    leaf_track = timeline.tracks[0]
    assert leaf_track.onset == (START + timedelta(seconds=30)).timestamp()
    values = [value for _, value in leaf_track.points]
    assert min(values) == 0.0 and max(values) == 1.0
    # Before its onset the leaf's CPU is low, after it at the top.
    assert all(value < 0.1 for at, value in leaf_track.points if at < leaf_track.onset)
    assert all(value == 1.0 for at, value in leaf_track.points if at >= leaf_track.onset)
    assert timeline.start < leaf_track.onset < timeline.end


@per_world
def test_an_alert_is_a_step_at_its_start_and_a_climbing_log_pattern_a_line_through_its_numbers(names):
    alert = alert_record(names, active_at=started(12), threshold=names.alert_threshold)
    results = [service_alerts(names, [alert]), rising_lines(names, ["71.5", "80.0", "88.5", "93.0"])]
    slot = cause_of(read(cause_question(names), names, results))

    timeline = timeline_of(slot.timeline, by_id(results))

    alert_track, log_track = timeline.tracks
    assert (alert_track.kind, log_track.kind) == (ALERT, LOG)
    assert alert_track.onset == (ASKS_NOW - timedelta(minutes=12)).replace(microsecond=0).timestamp()
    assert [value for _, value in alert_track.points] == [0.0, 0.0, 1.0, 1.0]
    # The axis opens before the alert's start, so its step shows.
    assert timeline.start < alert_track.onset
    # Every line of the pattern, oldest first, from its lowest number to its highest.
    numbers = [71.5, 80.0, 88.5, 93.0]
    expected = [(number - 71.5) / (93.0 - 71.5) for number in numbers]
    assert [value for _, value in log_track.points] == pytest.approx(expected)


def test_a_mark_whose_records_are_not_recorded_draws_nothing():
    made, results = recorded(("storefront", "checkout", "billing-db"))
    said = candidates_said(investigated(made, results, services={"storefront", "checkout", "billing-db"}))

    assert timeline_of(said.marks, {}) is None


@per_calls_world
def test_an_operations_calls_are_a_step_from_the_baselines_share_to_the_incidents(services):
    entry, quoting, converting, _ = services
    quote, convert = f"{quoting} Quote", f"{converting} Convert"
    record = operation(
        entry, "POST /checkout", before={(quote, convert): 20}, after={(quote, convert): 2, (quote,): 18}
    )
    results = [calls_result(41, [record])]
    said = candidates_said(investigated(calls_plan(), results, services=services))

    timeline = timeline_of(said.marks, by_id(results))

    [track] = timeline.tracks
    assert track.kind == SERIES and track.label == said.text.removeprefix("根因候选：")
    # 100 % of the spans went on to convert before the incident, 10 % in it: normalised, 1 then 0.
    window = calls_plan().window
    assert track.points == [
        (window.baseline_start.timestamp(), 1.0),
        (window.start.timestamp() - 1, 1.0),
        (window.start.timestamp(), 0.0),
        (window.now.timestamp() - 1, 0.0),
    ]
    assert track.onset == window.start.timestamp()
