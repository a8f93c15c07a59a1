"""Related alerts of one incident, grouped by code (§23): alerts whose starts lie near each other are
one incident, investigated once from its first start; incidents whose first candidate is the same
service are one incident too. An alert that has been firing for hours before the others (a standing
condition), or that fires by design (a dead man's switch, recognised by its data), says nothing about
when this incident began: it is kept apart, listed, and never leads a group or its candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.slot import TimelineMark

# An alert starting at most this long after the one before it belongs to the same incident.
NEAR = timedelta(minutes=10)
# An alert already firing this long before the newest alert is standing, not part of an onset.
STANDING = timedelta(hours=6)


@dataclass(frozen=True)
class AlertOnset:
    # How the report names it (`QueueBacklog · billing`), its service and its start.
    label: str
    service: str
    start: datetime | None
    # It fires by design, whatever its start says (`diagnosis.pipeline.always_firing`).
    always: bool = False


@dataclass
class Incident:
    alerts: list[AlertOnset]
    # The ranked candidates' subjects, once investigated.
    subjects: list[str] = field(default_factory=list)

    @property
    def start(self) -> datetime:
        return min(alert.start for alert in self.alerts if alert.start is not None)

    @property
    def services(self) -> list[str]:
        return list(dict.fromkeys(alert.service for alert in self.alerts if alert.service))


def incidents_of(alerts: Sequence[AlertOnset]) -> tuple[list[Incident], list[AlertOnset]]:
    """The incidents (oldest first; alerts in each by start) and the standing alerts."""
    timed = [alert for alert in alerts if alert.start is not None]
    newest = max((alert.start for alert in timed), default=None)
    standing = [
        alert
        for alert in alerts
        if alert.always or alert.start is None or (newest is not None and newest - alert.start > STANDING)
    ]
    incidents: list[Incident] = []
    for alert in sorted((a for a in timed if a not in standing), key=lambda a: (a.start, a.label)):
        if incidents and alert.start - incidents[-1].alerts[-1].start <= NEAR:
            incidents[-1].alerts.append(alert)
        else:
            incidents.append(Incident(alerts=[alert]))
    return incidents, standing


def merged_by_candidate(incidents: Sequence[Incident]) -> list[Incident]:
    """Incidents whose first candidate is the same service made one (the earlier keeps its candidates)."""
    merged: list[Incident] = []
    by_first: dict[str, Incident] = {}
    for incident in incidents:
        first = incident.subjects[0] if incident.subjects else None
        into = by_first.get(first) if first else None
        if into is None:
            merged.append(incident)
            if first:
                by_first[first] = incident
            continue
        into.alerts = sorted([*into.alerts, *incident.alerts], key=lambda a: (a.start, a.label))
    return merged


class IncidentFinding(BaseModel):
    """What the report says of one incident: its alerts, when it began, its candidates' line (or what
    was searched) and the moves its timeline draws from the report's own recorded calls."""

    model_config = ConfigDict(extra="forbid")

    alerts: list[str]
    onset: str
    conclusion: str
    timeline: list[TimelineMark] = []
