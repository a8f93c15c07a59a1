"""Related alerts of one incident are grouped by their starts; incidents with the same first candidate
are one; a standing alert (a dead man's switch firing for days) is kept apart and never leads. Two
worlds: a Kubernetes shop and the demo world's names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.incidents import AlertOnset, incidents_of, merged_by_candidate

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC)
WORLDS = {
    "shop": ("checkout", "billing-db", "ledger-service", "Watchdog"),
    "demo": ("payment-service", "order-service", "user-service", "DeadMansSwitch"),
}
per_world = pytest.mark.parametrize("names", WORLDS.values(), ids=WORLDS.keys())


def onset(service: str, minutes_ago: float | None, name: str = "Alert") -> AlertOnset:
    start = None if minutes_ago is None else NOW - timedelta(minutes=minutes_ago)
    return AlertOnset(label=f"{name} · {service}" if service else name, service=service, start=start)


@per_world
def test_alerts_starting_near_each_other_are_one_incident_and_a_later_burst_another(names):
    first, second, third, _ = names
    alerts = [onset(second, 22), onset(first, 25), onset(third, 3), onset(first, 16)]

    incidents, standing = incidents_of(alerts)

    assert [[a.service for a in incident.alerts] for incident in incidents] == [
        [first, second, first],
        [third],
    ]
    assert incidents[0].start == NOW - timedelta(minutes=25)
    assert incidents[0].services == [first, second]
    assert standing == []


@per_world
def test_a_standing_alert_is_kept_apart_and_never_leads_an_incident(names):
    first, second, _, switch = names
    watchdog = AlertOnset(label=switch, service="", start=NOW - timedelta(days=3))
    alerts = [watchdog, onset(first, 10), onset(second, 8), onset("", None, name="NoStart")]

    incidents, standing = incidents_of(alerts)

    assert [incident.alerts[0].service for incident in incidents] == [first]
    assert [alert.label for alert in standing] == [switch, "NoStart"]
    assert all(watchdog not in incident.alerts for incident in incidents)


@per_world
def test_incidents_whose_first_candidate_is_the_same_service_are_one(names):
    first, second, third, _ = names
    incidents, _ = incidents_of([onset(first, 50), onset(second, 20), onset(third, 2)])
    incidents[0].subjects = [third, first]
    incidents[1].subjects = [second]
    incidents[2].subjects = [third]

    merged = merged_by_candidate(incidents)

    assert [[a.service for a in incident.alerts] for incident in merged] == [[first, third], [second]]
    assert merged[0].subjects == [third, first]


@per_world
def test_an_alert_firing_by_design_is_standing_even_when_it_started_with_the_others(names):
    first, second, _, switch = names
    # A dead man's switch that restarted with Prometheus minutes ago: its data, not its age, says so.
    restarted = AlertOnset(label=switch, service="", start=NOW - timedelta(minutes=12), always=True)

    incidents, standing = incidents_of([restarted, onset(first, 10), onset(second, 8)])

    assert [alert.label for alert in standing] == [switch]
    assert [[a.service for a in incident.alerts] for incident in incidents] == [[first, second]]
