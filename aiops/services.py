"""AIOps mode: analyse firing alerts into one report, from a click or from Alertmanager.

An AIOps session (kind `aiops`) holds its alerts in `alert_scope`. Its background run records one
`query_alerts` call (the alerts active right now), diagnoses every firing alert in scope through
its own child session (the ordinary verified pipeline, a narrow per-alert question), a bounded
number at a time, writes the `告警分析报告` as the session's answer and then the
`aiops_rule_evaluation` slot.

Alertmanager's notifications are taken apart into episodes (`aiops.models.AlertEpisode`, one per fingerprint
and `startsAt`): a notification starts one analysis of the firing episodes nobody has seen yet, and closes on
their reports the episodes it says resolved. Resolved alerts are never analysed.
"""

from __future__ import annotations

import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from aiops.checks import aiops_checks
from aiops.delivery import delivery_queue
from aiops.models import AlertEpisode, ReportDelivery
from aiops.report import (
    FIRING,
    IDENTITY_LABELS,
    RESOLVED,
    AiopsReport,
    AlertSubject,
    alert_analysis_build,
    alert_question,
    alert_subjects,
    priority_sorted,
    report_build,
    report_markdown,
    report_output_type,
    report_record_of,
    resolved_text,
    runbook_query,
)
from diagnosis import tracing
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.investigation.incidents import IncidentFinding
from diagnosis.selectors.self_evaluation import AIOPS_RULE_EVALUATION
from diagnosis.services.incidents import incidents_investigated
from diagnosis.services.invocations import invocation_record
from diagnosis.services.rule_evaluation import rule_evaluation_enqueue
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import (
    new_error_id,
    session_enqueue,
    session_execute,
    session_failure_fields,
    session_update,
)
from diagnosis.services.session_runner import session_run
from diagnosis.services.sessions import MAX_ANALYSED_ALERTS, session_rate_slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS
from tools.evidence.tool import get_tool
from tools.records import service_of

logger = logging.getLogger(__name__)

SOURCE_ALERTMANAGER, SOURCE_MANUAL = "alertmanager", "manual"
INVENTORY_TOOL, RUNBOOK_TOOL, LOGS_TOOL = ALERTS.tool, KNOWLEDGE.tool, LOGS.tool
RUNBOOK_SECTIONS = 10
Status = DiagnosisSession.Status
# Rows per INSERT when a notification brings thousands of new episodes.
EPISODE_BATCH = 500


def aiops_start(
    *, owner=None, alert_names: list[str] | None = None, services: list[str] | None = None
) -> DiagnosisSession:
    """An analysis of the firing alerts (all, or those matching the filter), run in the background."""
    alert_filter = {"alert_names": list(alert_names or []), "services": list(services or [])}
    with session_rate_slot(owner=owner, cost=MAX_ANALYSED_ALERTS):
        session = DiagnosisSession.objects.create(
            query=_manual_query(alert_filter),
            owner=owner,
            engine=settings.DIAGNOSIS["ENGINE"],
            kind=DiagnosisSession.Kind.AIOPS,
            alert_scope={"source": SOURCE_MANUAL, "filter": alert_filter, "alerts": []},
        )
        session_enqueue(session=session, task="aiops.tasks.aiops_run_task")
    return session


@dataclass
class NotificationOutcome:
    """What one Alertmanager notification did: the analysis it started (or the report that already
    covers its first alert) and how many episodes were new, already known, or closed."""

    session: DiagnosisSession | None
    new: int = 0
    known: int = 0
    resolved: int = 0


def alertmanager_notification_receive(*, notification: dict) -> NotificationOutcome:
    """Record one Alertmanager notification (webhook version 4, validated) episode by episode.

    Firing episodes not seen before start one analysis, and so do firing episodes whose report
    FAILED (a killed worker, an outage): analysed again on their next notification. Episodes already
    covered (any group, any re-send, a concurrent delivery of the same notice) start nothing;
    resolved ones close their episode on the report that analysed it. All of it or nothing is stored.

    A constant number of queries whatever the count: a re-send of thousands of known alerts reads
    only their episodes' keys, states and report ids (never a report's body) and locks nothing.
    """
    alerts = [_alertmanager_alert(alert) for alert in notification["alerts"]]
    by_key: dict[tuple, dict] = {}
    for alert in alerts:
        by_key.setdefault(_episode_key(alert), alert)
    outcome = NotificationOutcome(session=None, known=len(alerts) - len(by_key))
    with transaction.atomic():
        episodes = _episodes_of(by_key)
        if missing := [key for key in by_key if key not in episodes]:
            _episodes_create([by_key[key] for key in missing])
            episodes.update(_episodes_of({key: by_key[key] for key in missing}))
        to_analyse, to_close = _episodes_to_change(by_key, episodes)
        if to_analyse or to_close:
            # Re-read under row locks (one order for every request, so concurrent notices sharing
            # episodes never deadlock): a concurrent notice may have claimed or closed them meanwhile.
            episodes.update(_episodes_of({key: by_key[key] for key in to_analyse + to_close}, lock=True))
            to_analyse, to_close = _episodes_to_change(
                {key: by_key[key] for key in to_analyse + to_close}, episodes
            )
        for key, alert in by_key.items():
            alert["episode_id"] = episodes[key]["pk"]
        if joining := _flap_candidates([key for key in to_analyse if key in set(missing)], by_key):
            # A new episode of a flapping alert joins its group's report: told there, not analysed.
            objects = AlertEpisode.objects.in_bulk([episodes[key]["pk"] for key in joining])
            for key in joining:
                if group := flap_group_join(episode=objects[episodes[key]["pk"]]):
                    to_analyse.remove(key)
                    outcome.session = outcome.session or group
        outcome.new, outcome.resolved = len(to_analyse), len(to_close)
        outcome.known += len(by_key) - outcome.new - outcome.resolved
        if to_analyse:
            analysed = set(to_analyse)
            new_alerts = [alert for key, alert in by_key.items() if key in analysed]
            outcome.session = _notification_session_create(notification, new_alerts)
            AlertEpisode.objects.filter(pk__in=[alert["episode_id"] for alert in new_alerts]).update(
                report=outcome.session, updated_at=timezone.now()
            )
        if to_close:
            _episodes_close([by_key[key] for key in to_close])
        closed = AlertEpisode.objects.in_bulk([episodes[key]["pk"] for key in to_close]).values()
        for report_pk in dict.fromkeys(e.report_id for e in closed if e.report_id):
            _report_resolved(report_pk, episodes=[e for e in closed if e.report_id == report_pk])
    if outcome.session is None:
        report_pk = next((e["report_id"] for key in by_key if (e := episodes[key])["report_id"]), None)
        if report_pk:
            outcome.session = DiagnosisSession.objects.only("session_id", "status").get(pk=report_pk)
    return outcome


def _flap_candidates(created: list[tuple], by_key: dict[tuple, dict]) -> list[tuple]:
    """The new firing episodes whose alert had an analysed episode within the flap window: the only
    ones that may join a flapping group (one query, however many alerts are new)."""
    firing = [key for key in created if by_key[key]["state"] == FIRING]
    if not firing:
        return []
    window = timedelta(minutes=settings.DIAGNOSIS["FLAP_WINDOW_MINUTES"])
    earlier = set(
        AlertEpisode.objects.filter(
            fingerprint__in={fingerprint for fingerprint, _ in firing},
            starts_at__gte=min(starts_at for _, starts_at in firing) - window,
            report__isnull=False,
        ).values_list("fingerprint", flat=True)
    )
    return [key for key in firing if key[0] in earlier]


def _episode_key(alert: dict) -> tuple[str, datetime]:
    return alert["fingerprint"], alert["starts_at_time"]


def _episodes_of(by_key: dict[tuple, dict], *, lock: bool = False) -> dict[tuple, dict]:
    """The stored episodes of these keys: key, state, report and its status only (one query, plus
    one for the reports' statuses); `lock` takes their row locks in key order."""
    if not by_key:
        return {}
    rows = AlertEpisode.objects.filter(
        fingerprint__in={fingerprint for fingerprint, _ in by_key},
        starts_at__in={starts_at for _, starts_at in by_key},
    ).order_by("fingerprint", "starts_at")
    if lock:
        rows = rows.select_for_update()
    found = {
        (row["fingerprint"], row["starts_at"]): row
        for row in rows.values("pk", "fingerprint", "starts_at", "state", "report_id")
        if (row["fingerprint"], row["starts_at"]) in by_key
    }
    statuses = dict(
        DiagnosisSession.objects.filter(
            pk__in={row["report_id"] for row in found.values()} - {None}
        ).values_list("pk", "status")
    )
    for row in found.values():
        row["report_status"] = statuses.get(row["report_id"])
    return found


def _episodes_create(alerts: list[dict]) -> None:
    """Insert the episodes no row exists for yet; one a concurrent notice inserted first is kept."""
    AlertEpisode.objects.bulk_create(
        [
            AlertEpisode(
                fingerprint=alert["fingerprint"],
                starts_at=alert["starts_at_time"],
                alert_name=alert["alert_name"],
                labels=alert["labels"],
                annotations=alert["annotations"],
                # A resolve seen first records the episode closed: its late firing notice is stale.
                state=alert["state"],
                ends_at=alert["ends_at_time"] if alert["state"] == RESOLVED else None,
            )
            for alert in sorted(alerts, key=_episode_key)
        ],
        ignore_conflicts=True,
        batch_size=EPISODE_BATCH,
    )


def _episodes_to_change(by_key: dict[tuple, dict], episodes: dict[tuple, dict]) -> tuple[list, list]:
    """Keys of the episodes to analyse (firing, no report or a FAILED one) and to close (firing,
    told resolved), in key order."""
    to_analyse, to_close = [], []
    for key in sorted(by_key):
        episode = episodes[key]
        if episode["state"] != AlertEpisode.State.FIRING:
            continue
        if by_key[key]["state"] == RESOLVED:
            to_close.append(key)
        elif episode["report_id"] is None or episode["report_status"] == Status.FAILED:
            to_analyse.append(key)
    return to_analyse, to_close


def _episodes_close(alerts: list[dict]) -> None:
    """Close these firing episodes (their rows locked by this transaction) at their alerts' ends."""
    now = timezone.now()
    by_end: dict[datetime, list[int]] = {}
    for alert in alerts:
        by_end.setdefault(alert["ends_at_time"], []).append(alert["episode_id"])
    # One UPDATE per end time: a notice's resolved alerts mostly share one.
    for ends_at, pks in by_end.items():
        AlertEpisode.objects.filter(pk__in=pks).update(
            state=AlertEpisode.State.RESOLVED, ends_at=ends_at, updated_at=now
        )


def _report_resolved(report_pk: int, *, episodes: list[AlertEpisode]) -> None:
    """Episodes of this report resolved: mirror their state into its scope and, once the report is
    written, into its text; a completed report's receivers are told, unless the episodes are a
    flapping group's (its settled notice tells them)."""
    report = DiagnosisSession.objects.select_for_update().get(pk=report_pk)
    scope = _scope_with_episode_states(report)
    if report.answer and report.status != Status.FAILED:
        written, _ = _report_render(report, scope)
        session_update(report, alert_scope=scope, **_report_fields(written))
    else:
        session_update(report, alert_scope=scope)
    if flap_resolved(report=report, episodes=episodes):
        return
    if report.status == Status.COMPLETED:
        delivery_queue(report=report, event=ReportDelivery.Event.RESOLVED)


def _notification_session_create(notification: dict, alerts: list[dict]) -> DiagnosisSession:
    scope = {
        "source": SOURCE_ALERTMANAGER,
        "receiver": notification["receiver"],
        "status": notification["status"],
        "group_key": notification["groupKey"],
        "group_labels": notification.get("groupLabels") or {},
        "common_labels": notification.get("commonLabels") or {},
        "external_url": notification.get("externalURL") or "",
        "alerts": [_scope_alert(alert) for alert in alerts],
    }
    session = DiagnosisSession.objects.create(
        query=_notification_query(alerts),
        engine=settings.DIAGNOSIS["ENGINE"],
        kind=DiagnosisSession.Kind.AIOPS,
        alert_scope=scope,
    )
    session_enqueue(session=session, task="aiops.tasks.aiops_run_task")
    return session


def aiops_run(*, session_pk: int) -> DiagnosisSession:
    """Analyse the session's alerts, write the report and the rule evaluation (background task body)."""
    session = session_execute(session_pk=session_pk, body=_analyse, first_stage="executor")
    if session.status == Status.FAILED:
        aiops_report_failed(session_pk=session.pk)
        session.refresh_from_db()
    return session


def aiops_report_failed(*, session_pk: int) -> None:
    """A report ended FAILED (its own error, or reaped after its worker died): its alert sessions not
    yet ended end FAILED now with its cause (nothing would ever run them), then every ended session
    gets its evaluation. Its episodes are analysed again on their next notification."""
    report = DiagnosisSession.objects.only("pk", "error").get(pk=session_pk)
    error = f"所属告警分析报告 {report.pk} 已失败：{report.error}"
    now = timezone.now()
    unfinished = Q(status__in=[Status.PENDING, Status.RUNNING])
    for child_pk in report.children.filter(unfinished).values_list("pk", flat=True):
        with transaction.atomic():
            # The status condition again: a child that ended meanwhile keeps its outcome.
            if DiagnosisSession.objects.filter(unfinished, pk=child_pk).update(
                status=Status.FAILED,
                **session_failure_fields(
                    kind=DiagnosisSession.Kind.AIOPS, error=error, error_id=new_error_id()
                ),
                output_type="",
                current_stage="failed",
                finished_at=now,
                updated_at=now,
            ):
                rule_evaluation_enqueue(session_pk=child_pk)
    aiops_rule_evaluation_run(session_pk=session_pk)


def aiops_reports_reaped(*, session_pks: list[int], **kwargs) -> None:
    """`sessions_reaped` receiver: the reports among the reaped sessions get what `aiops_run` gives a
    failed report."""
    reports = DiagnosisSession.objects.filter(
        pk__in=session_pks, kind=DiagnosisSession.Kind.AIOPS, parent__isnull=True, status=Status.FAILED
    )
    for report_pk in reports.values_list("pk", flat=True):
        aiops_report_failed(session_pk=report_pk)


def aiops_rule_evaluation_run(*, session_pk: int) -> dict:
    """Check the finished analysis by rule (no model) and store it in the `aiops_rule_evaluation` slot."""
    session = DiagnosisSession.objects.get(pk=session_pk)
    scope_alerts = session.alert_scope.get("alerts") or []
    inventory = session.tool_invocations.filter(tool_name=INVENTORY_TOOL).first()
    # The checks compare the alerts' JSON, as the scope stores alerts.
    active_alerts = [alert.stored() for alert in _inventory_alerts(inventory)] if inventory else []
    children = session.children.prefetch_related("tool_invocations").order_by("id")
    analysed = {
        _child_subject(child): Counter(i.tool_name for i in child.tool_invocations.all())
        for child in children
    }
    value = aiops_checks(
        report=report_record_of(session.answer_record) if session.status != Status.FAILED else None,
        scope_alerts=scope_alerts,
        active_alerts=active_alerts,
        analysed=analysed,
    )
    value["mode"] = session.alert_scope.get("source", "")
    self_evaluation_merge(session_pk=session_pk, slot=AIOPS_RULE_EVALUATION, value=value)
    return value


def aiops_concurrency(*, alert_count: int) -> int:
    """How many child sessions run at once.

    One when the database is SQLite (a single writer: threads would only queue on its lock) or
    when the caller holds a transaction (other threads' connections could not see the
    uncommitted sessions); else `DIAGNOSIS["AIOPS_CONCURRENCY"]`, at most one per alert.
    """
    if connection.vendor == "sqlite" or connection.in_atomic_block:
        return 1
    return max(1, min(settings.DIAGNOSIS["AIOPS_CONCURRENCY"], alert_count))


def _analyse(session: DiagnosisSession) -> None:
    inventory = invocation_record(session=session, round=1, tool_name=INVENTORY_TOOL, arguments={})
    scope = dict(session.alert_scope)
    if scope.get("source") == SOURCE_MANUAL:
        scope["alerts"] = _filtered_active_alerts(inventory, scope.get("filter") or {})
    subjects = alert_subjects(scope["alerts"])
    limit = settings.DIAGNOSIS["AIOPS_MAX_ALERTS"]
    analysed = subjects[:limit]

    children = {subject: _child_create(session, subject, scope["alerts"]) for subject in analysed}
    for alert in scope["alerts"]:
        child = children.get(AlertSubject.of(alert))
        alert["analysed"] = child is not None and alert["state"] == FIRING
        alert["session_id"] = child.session_id if alert["analysed"] else None
        if alert["state"] == FIRING and child is None:
            alert["not_analysed_reason"] = f"超出单次分析上限（{limit} 条）"
    # Each alert's runbook, by its runbook_url or name: guidance the report lists beside the findings.
    # A kind no source serves is not asked (the report's notes say so).
    runbooks_served, logs_served = get_tool(RUNBOOK_TOOL).available(), get_tool(LOGS_TOOL).available()
    for child in children.values():
        first = next(a for a in scope["alerts"] if a.get("session_id") == child.session_id)
        lookup = (
            invocation_record(
                session=session,
                round=1,
                tool_name=RUNBOOK_TOOL,
                # Every section of the alert's runbook (its steps among them), not the three best.
                arguments={"query": runbook_query(first), "top_k": RUNBOOK_SECTIONS},
            )
            if runbooks_served
            else None
        )
        # And its service's logs, whatever the question's topic: the report groups the error-level lines.
        # The service's name as the query adds no line filter (a source drops it from the search terms).
        service = AlertSubject.of(first).service
        logs = (
            invocation_record(
                session=session,
                round=1,
                tool_name=LOGS_TOOL,
                arguments={"query": service, "service": service, "limit": 100},
            )
            if service and logs_served
            else None
        )
        for alert in scope["alerts"]:
            if alert.get("session_id") == child.session_id:
                alert["runbook_invocation_id"] = lookup.pk if lookup else None
                alert["logs_invocation_id"] = logs.pk if logs else None
    session_update(session, alert_scope=scope)

    _children_run([child.pk for child in children.values()])

    # The incidents of the analysed alerts, each investigated once, from what their sessions and the
    # analysis recorded so far; stored in the scope the report is written from.
    evidence = list(
        ToolInvocation.objects.filter(Q(session__in=list(children.values())) | Q(session=session)).order_by(
            "id"
        )
    )
    analysed_alerts = [alert for alert in scope["alerts"] if alert.get("analysed")]
    findings, standing = incidents_investigated(session=session, alerts=analysed_alerts, evidence=evidence)
    scope["incidents"] = [finding.model_dump(mode="json") for finding in findings]
    scope["standing"] = standing
    session_update(session, alert_scope=scope)

    session_update(session, current_stage="composer")
    with transaction.atomic():
        # Locked against a resolved notice closing one of its episodes while the text is written.
        locked = DiagnosisSession.objects.select_for_update().get(pk=session.pk)
        scope = _scope_with_episode_states(locked)
        written, output_type = _report_render(locked, scope)
        session_update(session, output_type=output_type, alert_scope=scope, **_report_fields(written))
    # Before COMPLETED: whoever sees the analysis finished also sees its rule evaluation.
    aiops_rule_evaluation_run(session_pk=session.pk)
    with transaction.atomic():
        session_update(session, status=Status.COMPLETED, current_stage="done", finished_at=timezone.now())
        if scope.get("source") == SOURCE_ALERTMANAGER:
            delivery_queue(report=session, event=ReportDelivery.Event.COMPLETED)


def _report_fields(report: AiopsReport) -> dict:
    """The session fields a report is stored in: its record, and its Markdown written from it."""
    return {"answer": report_markdown(report), "answer_record": report.model_dump(mode="json")}


def _report_render(session: DiagnosisSession, scope: dict) -> tuple[AiopsReport, str]:
    """The report record and output type from the finished child sessions; fills each scope alert's
    verdict, output type and one-line summary (what a notification tells)."""
    children = list(session.children.order_by("id"))
    invocations = ToolInvocation.objects.filter(Q(session__in=children) | Q(session=session)).order_by("id")
    by_session: dict[int, list[ToolInvocation]] = {}
    for invocation in invocations:
        by_session.setdefault(invocation.session_id, []).append(invocation)
    parent_calls = {invocation.pk: invocation for invocation in by_session.get(session.pk, [])}
    alerts_by_child: dict[str, list[dict]] = {}
    for alert in scope["alerts"]:
        if alert.get("session_id"):
            alerts_by_child.setdefault(alert["session_id"], []).append(alert)
    analyses = []
    for child in children:
        own = alerts_by_child.get(child.session_id, [])
        analysis = alert_analysis_build(
            child=child,
            invocations=by_session.get(child.pk, []),
            runbook=parent_calls.get(own[0].get("runbook_invocation_id")) if own else None,
            logs=parent_calls.get(own[0].get("logs_invocation_id")) if own else None,
            resolved=resolved_text(own),
            flapping=next((alert["flapping"] for alert in own if alert.get("flapping")), None),
        )
        analysis.state_text = _state_text(own)
        for alert in own:
            alert.update(
                verdict=child.verdict or None,
                output_type=child.output_type or None,
                summary=analysis.summary(),
            )
        analyses.append(analysis)
    # The page's rows and the notice list the alerts as the report does: most urgent first.
    rank = {analysis.session_id: place for place, analysis in enumerate(priority_sorted(analyses))}
    scope["alerts"].sort(key=lambda alert: rank.get(alert.get("session_id") or "", len(rank)))
    scope["evidence_sources"] = list(
        dict.fromkeys(source.strip("`") for analysis in analyses for source in analysis.sources)
    )
    not_analysed = [
        _alert_label(alert)
        for alert in scope["alerts"]
        if alert["state"] == FIRING and not alert.get("analysed")
    ]
    report = report_build(
        analyses=analyses,
        scope_line=_scope_line(scope, len(analyses)),
        notes=_notes(scope, not_analysed),
        not_analysed=not_analysed,
        incidents=[IncidentFinding.model_validate(found) for found in scope.get("incidents") or []],
        standing=scope.get("standing") or [],
    )
    return report, report_output_type(analyses)


def _scope_with_episode_states(session: DiagnosisSession) -> dict:
    """The session's scope with each alert's state and end as its episode records them now."""
    scope = dict(session.alert_scope)
    episodes = {
        episode.pk: episode
        for episode in AlertEpisode.objects.filter(
            pk__in=[a.get("episode_id") for a in scope.get("alerts") or []]
        )
    }
    for alert in scope.get("alerts") or []:
        if episode := episodes.get(alert.get("episode_id")):
            alert["state"] = episode.state
            alert["ends_at"] = episode.ends_at.isoformat() if episode.ends_at else None
    return scope


def _state_text(alerts: list[dict]) -> str:
    if not alerts or any(alert["state"] == FIRING for alert in alerts):
        return FIRING
    return f"{RESOLVED}（{resolved_text(alerts)}）"


def _alert_label(alert: dict) -> str:
    subject = AlertSubject.of(alert)
    return subject.label + (f" {subject.where}" if subject.identity else "")


def _children_run(child_pks: list[int]) -> None:
    workers = aiops_concurrency(alert_count=len(child_pks))
    if workers == 1:
        for pk in child_pks:
            _child_run(pk)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aiops-alert") as pool:
        # Each alert's session a span of the report's trace, whichever thread runs it.
        list(pool.map(tracing.in_this_trace(_child_run_in_thread), child_pks))


def _child_run(session_pk: int) -> None:
    # The rule evaluation inline: this already is the background task, no need to queue another.
    session_run(session_pk=session_pk, evaluate_inline=True)


def _child_run_in_thread(session_pk: int) -> None:
    try:
        _child_run(session_pk)
    finally:
        # Each worker thread opened its own connection; nobody else would ever close it.
        connection.close()


def _child_create(session: DiagnosisSession, subject: AlertSubject, alerts: list[dict]) -> DiagnosisSession:
    own_alerts = [alert for alert in alerts if alert["state"] == FIRING and AlertSubject.of(alert) == subject]
    return DiagnosisSession.objects.create(
        query=alert_question(subject),
        owner=session.owner,
        engine=session.engine,
        kind=DiagnosisSession.Kind.AIOPS,
        parent=session,
        alert_scope={"source": session.alert_scope.get("source", ""), "alerts": own_alerts},
    )


def _child_subject(child: DiagnosisSession) -> AlertSubject:
    return AlertSubject.of({"alert_name": "", **(child.alert_scope.get("alerts") or [{}])[0]})


def _inventory_alerts(inventory: ToolInvocation) -> list[AlertRecord]:
    """The alerts the inventory call returned, typed; none when it failed."""
    result = inventory.tool_result()
    return [alert for alert in result.records if isinstance(alert, AlertRecord)] if result.success else []


def _filtered_active_alerts(inventory: ToolInvocation, alert_filter: dict) -> list[dict]:
    names, services = set(alert_filter.get("alert_names") or ()), set(alert_filter.get("services") or ())
    return [
        {
            "alert_name": alert.alert_name,
            "service": alert.service,
            "state": alert.state if "state" in alert.model_fields_set else FIRING,
            "description": alert.description,
            "active_at": alert.active_at if "active_at" in alert.model_fields_set else None,
            "duration": alert.duration if "duration" in alert.model_fields_set else None,
            "source_invocation_id": inventory.pk,
            # Alertmanager's fingerprint, when the source has one: a flapping group is marked by it.
            "fingerprint": alert.fingerprint,
            "flapping": _flapping_now(alert.fingerprint),
        }
        for alert in _inventory_alerts(inventory)
        if (not names or alert.alert_name in names) and (not services or alert.service in services)
    ]


def _flapping_now(fingerprint: str) -> dict | None:
    """The group of an alert flapping now (its latest report's), for the AI Ops report's mark."""
    if not fingerprint:
        return None
    latest = (
        AlertEpisode.objects.filter(fingerprint=fingerprint, report__isnull=False)
        .select_related("report")
        .order_by("-starts_at")
        .first()
    )
    entry = _flap_entry(latest.report, fingerprint) if latest else None
    group = (entry or {}).get("flapping")
    return group if group and group.get("state") == FLAPPING else None


def _alertmanager_alert(alert: dict) -> dict:
    labels = alert["labels"]
    ends_at = alert.get("endsAt")
    # Alertmanager sends year 1 as "no end yet"; a resolved alert without one ended when it was told.
    ends_at = ends_at if ends_at and ends_at.year > 1 else None
    if alert["status"] == RESOLVED and ends_at is None:
        ends_at = timezone.now()
    return {
        "alert_name": labels["alertname"],
        "service": service_of(labels),
        "identity": {name: labels[name] for name in IDENTITY_LABELS if labels.get(name)},
        "state": alert["status"],
        "fingerprint": alert["fingerprint"],
        "starts_at": alert["startsAt"].isoformat(),
        "starts_at_time": alert["startsAt"],
        "ends_at": ends_at.isoformat() if ends_at else None,
        "ends_at_time": ends_at,
        "labels": labels,
        "annotations": alert.get("annotations") or {},
        "generator_url": alert.get("generatorURL") or "",
    }


def _scope_alert(alert: dict) -> dict:
    """The alert as the report's scope stores it (JSON: no datetime objects)."""
    return {key: value for key, value in alert.items() if not key.endswith("_time")}


def _manual_query(alert_filter: dict) -> str:
    parts = []
    if alert_filter["alert_names"]:
        parts.append("告警 " + "、".join(alert_filter["alert_names"]))
    if alert_filter["services"]:
        parts.append("服务 " + "、".join(alert_filter["services"]))
    return "告警分析：" + ("；".join(parts) if parts else "全部 firing 告警")


def _notification_query(alerts: list[dict]) -> str:
    firing = [AlertSubject.of(a).label for a in alerts]
    return "告警分析（Alertmanager）：" + "、".join(dict.fromkeys(firing))


def _scope_line(scope: dict, analysed_count: int) -> str:
    if scope.get("source") == SOURCE_ALERTMANAGER:
        origin = "Alertmanager 告警通知"
    elif any((scope.get("filter") or {}).values()):
        origin = "一键分析（按筛选条件）"
    else:
        origin = "一键分析（全部 firing 告警）"
    return f"分析来源：{origin}；分析 {analysed_count} 条 firing 告警。"


def _notes(scope: dict, not_analysed: list[str]) -> list[str]:
    notes = []
    resolved = sum(alert["state"] == RESOLVED for alert in scope["alerts"])
    if resolved:
        notes.append(f"{resolved} 条告警已恢复（resolved），恢复时间见告警一览。")
    if not_analysed:
        limit = settings.DIAGNOSIS["AIOPS_MAX_ALERTS"]
        notes.append(f"另有 {len(not_analysed)} 条 firing 告警超出单次分析上限（{limit} 条），已列出未分析。")
    notes += [
        f"{kind.unconfigured}：各告警未查询{kind.noun}"
        for kind in (LOGS, KNOWLEDGE)
        if not get_tool(kind.tool).available()
    ]
    return notes


# Flapping: an alert whose episodes start `FLAP_EPISODES` times within
# `FLAP_WINDOW_MINUTES` is one group with one report, updated with the count and the latest state;
# its receivers get one notice per state of the group (flapping started, still flapping at most every
# `FLAP_REPEAT_MINUTES`, settled), not one per episode. The group lives on its report's scope alert
# (the one with the fingerprint): `flapping` = {"episodes", "since", "state"} as the notice carries
# it, and `flapping_notified_at`.

FLAPPING, SETTLED = "flapping", "settled"
SETTLE_TASK = "aiops.tasks.flap_settle_task"


def flap_group_join(*, episode: AlertEpisode) -> DiagnosisSession | None:
    """The report a new firing episode joins as part of a flapping group (no analysis of its own),
    or None when it is not one. Called inside the notification's transaction."""
    config = settings.DIAGNOSIS
    earlier = list(
        AlertEpisode.objects.filter(
            fingerprint=episode.fingerprint,
            starts_at__lt=episode.starts_at,
            starts_at__gte=episode.starts_at - timedelta(minutes=config["FLAP_WINDOW_MINUTES"]),
            report__isnull=False,
        ).order_by("starts_at")
    )
    if not earlier:
        return None
    latest_group = _flap_entry(earlier[-1].report, episode.fingerprint)
    group = latest_group.get("flapping") if latest_group else None
    if group is None and len(earlier) + 1 < config["FLAP_EPISODES"]:
        return None
    # A group that goes on keeps its report; a new one is told on the first report of the window.
    report = earlier[-1].report if group else earlier[0].report
    report = DiagnosisSession.objects.select_for_update().get(pk=report.pk)
    scope = dict(report.alert_scope)
    entry = _flap_entry(report, episode.fingerprint, scope=scope)
    previous = entry.get("flapping") or {}
    entry.update(
        episode_id=episode.pk,
        starts_at=episode.starts_at.isoformat(),
        state=AlertEpisode.State.FIRING,
        ends_at=None,
        flapping={
            "episodes": previous["episodes"] + 1 if previous else len(earlier) + 1,
            "since": previous.get("since") or earlier[0].starts_at.isoformat(),
            "state": FLAPPING,
        },
    )
    now = timezone.now()
    notified = entry.get("flapping_notified_at")
    repeat = timedelta(minutes=config["FLAP_REPEAT_MINUTES"])
    notify = (
        previous.get("state") != FLAPPING or not notified or now - datetime.fromisoformat(notified) >= repeat
    )
    if notify:
        entry["flapping_notified_at"] = now.isoformat()
    AlertEpisode.objects.filter(pk=episode.pk).update(report=report)
    _flap_report_update(report, scope, event=ReportDelivery.Event.FLAPPING if notify else None)
    return report


def flap_resolved(*, report: DiagnosisSession, episodes: list[AlertEpisode]) -> bool:
    """Whether the resolved `episodes` all belong to a flapping group of `report` (their resolve is no
    notice of its own); schedules the settle check of each group."""
    groups = {
        entry["fingerprint"]: entry
        for entry in report.alert_scope.get("alerts") or []
        if (entry.get("flapping") or {}).get("state") == FLAPPING
    }
    if not episodes or any(groups.get(e.fingerprint, {}).get("episode_id") != e.pk for e in episodes):
        return False
    when = timezone.now() + timedelta(minutes=settings.DIAGNOSIS["FLAP_SETTLE_MINUTES"])
    for episode in episodes:
        _settle_check_schedule(report_pk=report.pk, episode_pk=episode.pk, when=when)
    return True


def flap_settle_check(*, report_pk: int, episode_pk: int) -> bool:
    """Settled when the group's latest episode is still `episode_pk` and resolved: nothing started
    since the settle time began. Then the report says so and its receivers get the settled notice."""
    with transaction.atomic():
        report = DiagnosisSession.objects.select_for_update().get(pk=report_pk)
        scope = dict(report.alert_scope)
        entry = next((a for a in scope.get("alerts") or [] if a.get("episode_id") == episode_pk), None)
        group = (entry or {}).get("flapping") or {}
        resolved = AlertEpisode.objects.filter(pk=episode_pk, state=AlertEpisode.State.RESOLVED).exists()
        if group.get("state") != FLAPPING or not resolved:
            return False
        entry["flapping"] = group | {"state": SETTLED}
        _flap_report_update(report, scope, event=ReportDelivery.Event.SETTLED)
    return True


def _flap_entry(report: DiagnosisSession, fingerprint: str, *, scope: dict | None = None) -> dict | None:
    alerts = (scope or report.alert_scope).get("alerts") or []
    return next((alert for alert in alerts if alert.get("fingerprint") == fingerprint), None)


def _flap_report_update(report: DiagnosisSession, scope: dict, *, event: str | None) -> None:
    """The report's scope and, once written, its text with the group's count and state; then its notice."""
    if report.answer and report.status != Status.FAILED:
        written, _ = _report_render(report, scope)
        session_update(report, alert_scope=scope, **_report_fields(written))
    else:
        session_update(report, alert_scope=scope)
    if event and report.status == Status.COMPLETED:
        delivery_queue(report=report, event=event)


def _settle_check_schedule(*, report_pk: int, episode_pk: int, when: datetime) -> None:
    from django_q.models import Schedule
    from django_q.tasks import schedule

    transaction.on_commit(
        lambda: schedule(
            SETTLE_TASK,
            report_pk,
            episode_pk,
            name=f"flap-settle-{report_pk}-{episode_pk}",
            schedule_type=Schedule.ONCE,
            repeats=1,
            next_run=when,
        )
    )
