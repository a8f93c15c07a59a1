"""What the trace shows of an AIOps analysis: its alerts and each analysed alert's child session."""

from __future__ import annotations

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
