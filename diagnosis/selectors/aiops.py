"""What the trace shows of an AIOps analysis: its alerts and each analysed alert's child session."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from diagnosis.models import DiagnosisSession


def aiops_summary(*, session: DiagnosisSession) -> dict | None:
    """None for chat sessions; for an analysis its scope and per-alert results; for a child its parent."""
    if session.kind != DiagnosisSession.Kind.AIOPS:
        return None
    if session.parent_id is not None:
        parent_session_id = DiagnosisSession.objects.values_list("session_id", flat=True).get(
            pk=session.parent_id
        )
        return {"parent_session_id": parent_session_id, "alerts": session.alert_scope.get("alerts") or []}
    children = session.children.order_by("id").only(
        "session_id", "alert_scope", "status", "output_type", "verdict", "groundedness_score", "parent_id"
    )
    return {
        "source": session.alert_scope.get("source", ""),
        "alert_scope": session.alert_scope,
        "children": [_child_summary(child) for child in children],
    }


def _child_summary(child: DiagnosisSession) -> dict:
    alert = (child.alert_scope.get("alerts") or [{}])[0]
    return {
        "session_id": child.session_id,
        "alert_name": alert.get("alert_name", ""),
        "service": alert.get("service", ""),
        "state": alert.get("state", ""),
        "status": child.status,
        "output_type": child.output_type,
        "verdict": child.verdict,
        "groundedness_score": child.groundedness_score,
    }


# What became of an alert's child session, as the report counts it.
OUTCOMES = ("verified", "gaps", "degraded", "running", "not_analysed")


@dataclass(frozen=True)
class AlertRow:
    """One alert of an analysis with its child session's outcome."""

    alert_name: str
    service: str
    # The alert's identifying labels.
    identity: dict[str, str]
    state: str
    ends_at: datetime | None
    session_id: str | None
    verdict: str
    outcome: str
    note: str
    # The alert's flapping group: {"episodes", "since", "state"}, or None.
    flapping: dict | None = None


@dataclass(frozen=True)
class AiOpsReport:
    """The head of an analysis's report: the overall status, each alert with its outcome, the sources."""

    rows: list[AlertRow]
    tally: dict[str, int]
    sources: list[str] = field(default_factory=list)

    @property
    def analysed_count(self) -> int:
        return sum(self.tally.get(kind, 0) for kind in ("verified", "gaps", "degraded", "running"))


def aiops_report(*, session: DiagnosisSession, children: list[DiagnosisSession]) -> AiOpsReport:
    """The rows of an analysis's alerts (its scope), each with its child's current outcome."""
    by_id = {child.session_id: child for child in children}
    rows = []
    for alert in session.alert_scope.get("alerts") or []:
        child = by_id.get(alert.get("session_id") or "")
        rows.append(
            AlertRow(
                alert_name=alert.get("alert_name", ""),
                service=alert.get("service") or "",
                identity=alert.get("identity") or {},
                state=alert.get("state", ""),
                ends_at=datetime.fromisoformat(alert["ends_at"]) if alert.get("ends_at") else None,
                session_id=child.session_id if child else None,
                verdict=child.verdict if child else "",
                outcome=_outcome(child),
                note=alert.get("not_analysed_reason", ""),
                flapping=alert.get("flapping"),
            )
        )
    return AiOpsReport(
        rows=rows,
        tally=dict.fromkeys(OUTCOMES, 0) | Counter(row.outcome for row in rows),
        sources=list(session.alert_scope.get("evidence_sources") or []),
    )


def _outcome(child: DiagnosisSession | None) -> str:
    if child is None:
        return "not_analysed"
    if child.status in (DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING):
        return "running"
    if (
        child.status == DiagnosisSession.Status.FAILED
        or child.output_type == DiagnosisSession.OutputType.DEGRADED
    ):
        return "degraded"
    if child.output_type == DiagnosisSession.OutputType.NORMAL:
        return "verified"
    return "gaps"
