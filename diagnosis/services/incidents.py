"""An alert analysis's investigation (§23): the firing alerts grouped into incidents by their starts,
each incident investigated once from its first start over the metrics source's key signals (the
range queries recorded as the analysis' own calls), else from what its alerts and lines say moved;
incidents with the same first candidate are one. Standing alerts (firing for hours: a dead man's
switch) never lead an incident.

Every candidate's numbers are computed again from the cited range result before the report says them
(`derived_failures`): a candidate that fails is not said.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.always_firing import fires_always
from diagnosis.pipeline.derived import derived_failures
from diagnosis.pipeline.investigation.conclusion import (
    FIRST,
    MAX_CANDIDATES,
    Said,
    candidates_said,
    joined,
    searched_said,
)
from diagnosis.pipeline.investigation.incidents import (
    AlertOnset,
    Incident,
    IncidentFinding,
    incidents_of,
    merged_by_candidate,
)
from diagnosis.pipeline.investigation.investigate import Plan, investigated, plan_of, window_of
from diagnosis.pipeline.investigation.records import ALERT_TIME, record_moves
from diagnosis.pipeline.investigation.said import time_said
from diagnosis.pipeline.slot import Slot
from diagnosis.selectors.world import world_current
from diagnosis.services.invocations import invocations_record
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.result import ToolResult
from tools.vocabulary import Vocabulary

FIRING = "firing"
# The range queries of one incident run this many at once.
CONCURRENCY = 2


def incidents_investigated(
    *, session: DiagnosisSession, alerts: Sequence[dict], evidence: Sequence[ToolInvocation]
) -> tuple[list[IncidentFinding], list[str]]:
    """The incidents of the firing `alerts` (scope dicts), each with its candidates, and the labels of
    the standing alerts. `evidence`: the analysis' calls so far (its alerts' records and lines)."""
    vocabulary = current_vocabulary()
    onsets = [
        AlertOnset(
            label=alert_label(alert),
            service=alert.get("service") or "",
            start=alert_start(alert),
            always=_fires_always(alert, vocabulary),
        )
        for alert in alerts
        if alert.get("state") == FIRING
    ]
    incidents, standing = incidents_of(onsets)
    if not incidents:
        return [], [alert.label for alert in standing]
    world = world_current()
    results = [invocation.tool_result() for invocation in evidence]
    said: dict[int, Said] = {}
    for incident in incidents:
        found, subjects = _investigated(session, incident, world=world, evidence=results)
        incident.subjects = subjects
        said[id(incident)] = found
    findings = [
        IncidentFinding(
            alerts=[alert.label for alert in incident.alerts],
            onset=time_said(incident.start),
            conclusion=said[id(incident)].text,
            timeline=said[id(incident)].marks,
        )
        for incident in merged_by_candidate(incidents)
    ]
    return findings, [alert.label for alert in standing]


def _fires_always(alert: dict, vocabulary: Vocabulary) -> bool:
    """Whether a scope alert fires by design: its labels' severity, its rule, its annotations."""
    return fires_always(
        name=alert.get("alert_name") or "",
        severity=str((alert.get("labels") or {}).get("severity") or alert.get("severity") or ""),
        expr=str(alert.get("expr") or ""),
        texts=[str(alert.get("description") or ""), *(str(v) for v in (alert.get("annotations") or {}).values())],
        vocabulary=vocabulary,
    )


def alert_label(alert: dict) -> str:
    service = alert.get("service") or ""
    return f"{alert['alert_name']} · {service}" if service else alert["alert_name"]


def alert_start(alert: dict) -> datetime | None:
    """An Alertmanager alert's `starts_at` (ISO), else a source's `active_at` (the tools' local time)."""
    try:
        if alert.get("starts_at"):
            return datetime.fromisoformat(alert["starts_at"])
        if alert.get("active_at"):
            return datetime.strptime(alert["active_at"], ALERT_TIME).astimezone()
    except ValueError:
        return None
    return None


def _investigated(
    session: DiagnosisSession, incident: Incident, *, world, evidence: Sequence[ToolResult]
) -> tuple[Said, list[str]]:
    window = window_of(now=world.now, start=incident.start)
    plan = Plan(window=window, signals=(), edges=())
    if world.families:
        plan = plan_of(
            world.families,
            window=window,
            service_labels=world.service_labels,
            series=world.inventory.metrics,
            label_names=world.label_names,
        )
    calls = plan.calls()
    recorded = (
        invocations_record(session=session, round=1, calls=calls, concurrency=CONCURRENCY) if calls else []
    )
    results = [invocation.tool_result() for invocation in recorded]
    investigation = investigated(plan, results, services=world.inventory.services)
    if investigation.candidates:
        said = candidates_said(investigation)
        if _holds(said, results, world):
            return said, [c.subject for c in investigation.candidates[:MAX_CANDIDATES]]
    # Without a series that moved: what the incident's alerts and its services' lines say moved.
    services = set(incident.services)
    moves = [move for move in record_moves(evidence) if move.subject in services][:MAX_CANDIDATES]
    if moves:
        said = joined([move.said() for move in moves], lead=FIRST)
        if _holds(said, evidence, world):
            return said, list(dict.fromkeys(move.subject for move in moves))
    return Said(text=searched_said(investigation)), []


def _holds(said: Said, results: Sequence[ToolResult], world) -> bool:
    """Whether every number of the candidates is computed again from, or quoted in, what they cite."""
    checked = Slot.model_construct(
        conclusion=said.text, bindings=said.bindings, derived=said.derived, inference=True
    )
    return not derived_failures(checked, invocations=results, names=world.fact_names)
