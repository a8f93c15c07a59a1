"""How one series moved: onset, medians before and after, a robust score; a series that did not move,
or has too little history, says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.change import MOVED, change_of, window_median

START = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)


def minutes(values: list[float], *, step: timedelta = timedelta(minutes=1)) -> list[tuple[datetime, float]]:
    return [(START + i * step, value) for i, value in enumerate(values)]


def at(minute: int) -> datetime:
    return START + timedelta(minutes=minute)


def test_a_step_up_is_found_at_its_first_point_with_the_medians_either_side():
    noise = [1.0, 1.1, 0.9, 1.05, 0.95] * 7
    points = minutes([*noise, 5.0, 5.2, 4.9, 5.1, 5.0])

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(39))

    assert change is not None
    assert change.onset == at(35)
    assert change.before == pytest.approx(1.0, abs=0.05)
    assert change.after == 5.0
    assert change.rising and change.score > 10
    # The medians are those of the windows the change names: the gatekeeper computes them again.
    assert window_median(points, start=change.level_start, end=change.baseline_end) == change.before
    assert window_median(points, start=change.onset, end=change.end, closed=True) == change.after


def test_a_series_that_only_wobbles_did_not_move():
    points = minutes([1.0, 1.1, 0.9, 1.05, 0.95] * 8)

    assert change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(39)) is None


def test_an_earlier_incident_inside_the_baseline_does_not_hide_the_one_asked_about():
    """A spike ten minutes before widens the MAD, but only adds two steps to the step-to-step noise."""
    quiet = [5.0, 5.2, 4.8, 5.1, 4.9]
    points = minutes([*quiet * 3, 20.0, 21.0, 20.5, 20.0, 20.8, 21.0, 20.2, *quiet * 3, 18.0, 19.0, 18.5])

    change = change_of(points, onset_hint=at(37), baseline_start=at(0), end=at(39))

    assert change is not None
    assert change.before == pytest.approx(5.0, abs=0.2)
    assert change.onset == at(37)


def spiky(spikes: int) -> list[tuple[datetime, float]]:
    """A latency quantile of a few requests a minute: 20 ms, with `spikes` three-minute excursions to
    200 ms (a rate window's width) in its baseline, then the same excursion after the stated start."""
    values = [0.02] * 40
    for spike in range(spikes):
        values[4 + 10 * spike : 7 + 10 * spike] = [0.2, 0.21, 0.2]
    values[36:40] = [0.2, 0.21, 0.2, 0.2]
    return minutes(values)


def test_a_series_that_made_the_same_move_three_times_in_its_baseline_moves_so_routinely():
    assert change_of(spiky(3), onset_hint=at(36), baseline_start=at(0), end=at(39)) is None


@pytest.mark.parametrize("spikes", [0, 1, 2])
def test_two_earlier_incidents_in_a_baseline_are_no_habit_yet(spikes):
    change = change_of(spiky(spikes), onset_hint=at(36), baseline_start=at(0), end=at(39))

    assert change is not None
    assert (change.before, change.after, change.onset) == (0.02, 0.2, at(36))


def test_a_return_to_the_whole_baselines_level_is_a_recovery_not_a_move():
    """An earlier incident filled the last minutes before the stated start; the series going back to
    what it was over the whole baseline is that incident ending."""
    quiet = [5.0, 5.2, 4.8, 5.1, 4.9]
    points = minutes([*quiet * 5, 20.0, 21.0, 20.5, 20.0, 20.8, 21.0, 20.2, 20.6, *quiet])

    assert change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(37)) is None


def test_a_fall_is_a_change_too():
    points = minutes([*[100.0, 101.0, 99.0, 100.5] * 8, 10.0, 12.0, 11.0])

    change = change_of(points, onset_hint=at(32), baseline_start=at(0), end=at(34))

    assert change is not None and not change.rising
    assert change.score >= MOVED


def test_a_series_begun_just_before_the_stated_start_keeps_what_history_it_has():
    points = minutes([1.0, 1.0, 1.1, 0.9, 9.0, 9.5, 9.0])

    change = change_of(points, onset_hint=at(4), baseline_start=at(-30), end=at(6))

    assert change is not None and change.onset == at(4)


def test_one_point_out_of_line_is_no_onset():
    points = minutes([*[1.0, 1.1, 0.9, 1.0] * 8, 9.0, 1.0, 1.05])

    assert change_of(points, onset_hint=at(32), baseline_start=at(0), end=at(34)) is None


def test_a_rate_flat_at_zero_before_moves_when_it_rises_and_stays():
    """No evictions or errors before, then a steady rate: no spread to measure it by but its own size."""
    points = minutes([0.0] * 35 + [40.0, 42.0, 38.0, 41.0, 40.0])

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(39))

    assert change is not None and change.onset == at(35)
    assert (change.before, change.after) == (0.0, 40.0)


def test_one_blip_on_a_rate_flat_at_zero_is_no_move():
    points = minutes([0.0] * 35 + [0.0, 3.0, 0.0, 0.0, 0.0])

    assert change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(39)) is None


def test_a_rate_that_rises_from_zero_late_in_the_window_moves_from_its_onset():
    points = minutes([0.0] * 35 + [0.0, 0.0, 0.0, 130.0, 300.0, 480.0, 650.0])

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(41))

    assert change is not None and change.onset == at(38) and change.after == 390.0


def test_a_wobble_past_the_threshold_before_the_move_is_not_its_onset():
    noise = [1.0, 1.02, 0.98, 1.01, 0.99] * 7
    points = minutes([*noise, 1.2, 1.2, 1.0, 0.99, 1.01, 1.0, 0.98, 5.0, 5.1, 5.2])

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(44))

    assert change is not None and change.onset == at(42) and change.after == 5.1


def test_a_dip_before_a_rise_that_holds_at_the_end_is_not_the_move():
    noise = [1.0, 1.02, 0.98, 1.01, 0.99] * 7
    points = minutes([*noise, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 1.0, 1.6, 2.4])

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(43))

    assert change is not None and change.rising and change.onset == at(42)


def test_a_series_seen_only_now_and_then_takes_its_level_from_the_whole_baseline():
    """Calls traced in bursts: three minutes here and there. The last burst before the start was an
    earlier incident; taken alone as the level, it would hide the one asked about."""
    points = [
        *((at(minute), 1.0) for minute in (2, 3, 4, 11, 12, 13)),
        *((at(minute), 9.0) for minute in (24, 25, 26)),
        *((at(minute), 9.2) for minute in (35, 36, 37)),
    ]

    change = change_of(points, onset_hint=at(35), baseline_start=at(0), end=at(38))

    assert change is not None
    assert change.before == 1.0
    assert change.level_start == at(0)
    assert change.after == 9.2


def test_a_series_sampled_throughout_keeps_the_last_stretch_as_its_level():
    quiet = [5.0, 5.2, 4.8, 5.1, 4.9]
    points = minutes([*[1.0, 1.1, 0.9, 1.05, 0.95] * 4, *quiet * 3, 20.0, 21.0, 20.5])

    change = change_of(points, onset_hint=at(37), baseline_start=at(0), end=at(37))

    assert change is not None
    assert change.before == pytest.approx(5.0, abs=0.2)
    assert change.level_start == at(25)
