"""AIOps mode (seed 004 §6): analyse firing alerts into one report, from a click or from Alertmanager.

An AIOps session (kind `aiops`) holds its alerts in `alert_scope`. Its background run records one
`query_metrics` call (the alerts active right now), diagnoses every firing alert in scope through
its own child session (the ordinary verified pipeline, a narrow per-alert question), a bounded
number at a time, writes the `告警分析报告` as the session's answer and then the
`aiops_rule_evaluation` slot. Resolved alerts are recorded in the scope, never analysed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from aiops.checks import aiops_checks
from aiops.report import (
    FIRING,
    RESOLVED,
    AlertSubject,
    alert_analysis_build,
    alert_question,
    alert_subjects,
    report_build,
    report_output_type,
)
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.selectors.self_evaluation import AIOPS_RULE_EVALUATION
from diagnosis.services.invocations import invocation_record
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import session_enqueue, session_execute, session_update
from diagnosis.services.session_runner import session_run
from diagnosis.services.sessions import MAX_ANALYSED_ALERTS, session_rate_slot

logger = logging.getLogger(__name__)

SOURCE_ALERTMANAGER, SOURCE_MANUAL = "alertmanager", "manual"
INVENTORY_TOOL = "query_metrics"
Status = DiagnosisSession.Status


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


def alertmanager_notification_receive(*, notification: dict) -> DiagnosisSession:
    """The session analysing one Alertmanager notification (webhook version 4, validated).

    Idempotent per group key and fingerprint set: the same notification again returns the
    session it created the first time and starts nothing.
    """
    alerts = [_alertmanager_alert(alert) for alert in notification["alerts"]]
    key = _idempotency_key(notification["groupKey"], [alert["fingerprint"] for alert in alerts])
    existing = DiagnosisSession.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    scope = {
        "source": SOURCE_ALERTMANAGER,
        "receiver": notification["receiver"],
        "status": notification["status"],
        "group_key": notification["groupKey"],
        "group_labels": notification.get("groupLabels") or {},
        "common_labels": notification.get("commonLabels") or {},
        "external_url": notification.get("externalURL") or "",
        "alerts": alerts,
    }
    try:
        with transaction.atomic():
            session = DiagnosisSession.objects.create(
                query=_notification_query(alerts),
                engine=settings.DIAGNOSIS["ENGINE"],
                kind=DiagnosisSession.Kind.AIOPS,
                alert_scope=scope,
                idempotency_key=key,
            )
    except IntegrityError:
        # The same notification arrived twice at once: the other request created it.
        return DiagnosisSession.objects.get(idempotency_key=key)
    session_enqueue(session=session, task="aiops.tasks.aiops_run_task")
    return session


def aiops_run(*, session_pk: int) -> DiagnosisSession:
    """Analyse the session's alerts, write the report and the rule evaluation (background task body)."""
    session = session_execute(session_pk=session_pk, body=_analyse, first_stage="executor")
    if session.status == Status.FAILED:
        aiops_rule_evaluation_run(session_pk=session.pk)
        session.refresh_from_db()
    return session


def aiops_rule_evaluation_run(*, session_pk: int) -> dict:
    """Check the finished analysis (seed 004 §6) and store it in the `aiops_rule_evaluation` slot."""
    session = DiagnosisSession.objects.get(pk=session_pk)
    scope_alerts = session.alert_scope.get("alerts") or []
    inventory = session.tool_invocations.filter(tool_name=INVENTORY_TOOL).first()
    active_alerts = (inventory.output.get("alerts") or []) if inventory and inventory.success else []
    children = session.children.prefetch_related("tool_invocations").order_by("id")
    analysed = {
        _child_subject(child): Counter(i.tool_name for i in child.tool_invocations.all())
        for child in children
    }
    value = aiops_checks(
        report=session.answer if session.status != Status.FAILED else "",
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
    uncommitted sessions); else `DIAGNOSIS_AIOPS_CONCURRENCY`, at most one per alert.
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
    analysed, skipped = subjects[:MAX_ANALYSED_ALERTS], subjects[MAX_ANALYSED_ALERTS:]

    children = {subject: _child_create(session, subject, scope["alerts"]) for subject in analysed}
    for alert in scope["alerts"]:
        child = children.get(AlertSubject(alert["alert_name"], alert.get("service") or ""))
        alert["analysed"] = child is not None and alert["state"] == FIRING
        alert["session_id"] = child.session_id if alert["analysed"] else None
    session_update(session, alert_scope=scope)

    _children_run([child.pk for child in children.values()])

    finished = DiagnosisSession.objects.filter(pk__in=[c.pk for c in children.values()]).order_by("id")
    by_child: dict[int, list[ToolInvocation]] = {}
    for invocation in ToolInvocation.objects.filter(session__in=finished).order_by("id"):
        by_child.setdefault(invocation.session_id, []).append(invocation)
    analyses = [
        alert_analysis_build(child=child, invocations=by_child.get(child.pk, [])) for child in finished
    ]
    session_update(session, current_stage="composer")
    answer = report_build(
        analyses=analyses, scope_line=_scope_line(scope, len(analysed)), notes=_notes(scope, skipped)
    )
    session_update(session, answer=answer, output_type=report_output_type(analyses))
    # Before COMPLETED: whoever sees the analysis finished also sees its rule evaluation.
    aiops_rule_evaluation_run(session_pk=session.pk)
    session_update(session, status=Status.COMPLETED, current_stage="done", finished_at=timezone.now())


def _children_run(child_pks: list[int]) -> None:
    workers = aiops_concurrency(alert_count=len(child_pks))
    if workers == 1:
        for pk in child_pks:
            _child_run(pk)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aiops-alert") as pool:
        list(pool.map(_child_run_in_thread, child_pks))


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
    own_alerts = [
        alert
        for alert in alerts
        if alert["state"] == FIRING
        and AlertSubject(alert["alert_name"], alert.get("service") or "") == subject
    ]
    return DiagnosisSession.objects.create(
        query=alert_question(subject),
        owner=session.owner,
        engine=session.engine,
        kind=DiagnosisSession.Kind.AIOPS,
        parent=session,
        alert_scope={"source": session.alert_scope.get("source", ""), "alerts": own_alerts},
    )


def _child_subject(child: DiagnosisSession) -> AlertSubject:
    alert = (child.alert_scope.get("alerts") or [{}])[0]
    return AlertSubject(alert.get("alert_name", ""), alert.get("service") or "")


def _filtered_active_alerts(inventory: ToolInvocation, alert_filter: dict) -> list[dict]:
    names, services = set(alert_filter.get("alert_names") or ()), set(alert_filter.get("services") or ())
    alerts = (inventory.output.get("alerts") or []) if inventory.success else []
    return [
        {
            "alert_name": alert["alert_name"],
            "service": alert.get("service") or "",
            "state": alert.get("state", FIRING),
            "description": alert.get("description", ""),
            "active_at": alert.get("active_at"),
            "duration": alert.get("duration"),
            "source_invocation_id": inventory.pk,
        }
        for alert in alerts
        if (not names or alert["alert_name"] in names) and (not services or alert.get("service") in services)
    ]


def _alertmanager_alert(alert: dict) -> dict:
    labels = alert["labels"]
    ends_at = alert.get("endsAt")
    return {
        "alert_name": labels["alertname"],
        "service": labels.get("service", ""),
        "state": alert["status"],
        "fingerprint": alert["fingerprint"],
        # Alertmanager sends year 1 as "no end yet".
        "starts_at": alert["startsAt"].isoformat(),
        "ends_at": ends_at.isoformat() if ends_at and ends_at.year > 1 else None,
        "labels": labels,
        "annotations": alert.get("annotations") or {},
        "generator_url": alert.get("generatorURL") or "",
    }


def _idempotency_key(group_key: str, fingerprints: list[str]) -> str:
    identity = json.dumps([group_key, sorted(set(fingerprints))], ensure_ascii=False)
    return "alertmanager:" + hashlib.sha256(identity.encode()).hexdigest()


def _manual_query(alert_filter: dict) -> str:
    parts = []
    if alert_filter["alert_names"]:
        parts.append("告警 " + "、".join(alert_filter["alert_names"]))
    if alert_filter["services"]:
        parts.append("服务 " + "、".join(alert_filter["services"]))
    return "告警分析：" + ("；".join(parts) if parts else "全部 firing 告警")


def _notification_query(alerts: list[dict]) -> str:
    firing = [AlertSubject(a["alert_name"], a["service"]).label for a in alerts if a["state"] == FIRING]
    resolved = sum(a["state"] == RESOLVED for a in alerts)
    text = "告警分析（Alertmanager）：" + ("、".join(dict.fromkeys(firing)) or "无 firing 告警")
    if resolved:
        text += f"；另有 {resolved} 条已恢复告警"
    return text


def _scope_line(scope: dict, analysed_count: int) -> str:
    if scope.get("source") == SOURCE_ALERTMANAGER:
        origin = "Alertmanager 告警通知"
    elif any((scope.get("filter") or {}).values()):
        origin = "一键分析（按筛选条件）"
    else:
        origin = "一键分析（全部 firing 告警）"
    return f"分析来源：{origin}；分析 {analysed_count} 条 firing 告警。"


def _notes(scope: dict, skipped: list[AlertSubject]) -> list[str]:
    notes = []
    resolved = sum(alert["state"] == RESOLVED for alert in scope["alerts"])
    if resolved:
        notes.append(f"另有 {resolved} 条已恢复（resolved）告警已记录，按约定不做分析。")
    if skipped:
        notes.append(
            f"另有 {len(skipped)} 条 firing 告警超出单次分析上限（{MAX_ANALYSED_ALERTS} 条），已记录未分析。"
        )
    return notes
