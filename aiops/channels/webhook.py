"""The generic JSON webhook (`DIAGNOSIS_NOTIFY_URL`, bearer `DIAGNOSIS_NOTIFY_TOKEN`): the versioned
report with each of its alerts and their verdicts, for a team's own receiver."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

from aiops.channels.base import Channel, Outgoing, http_refusal
from aiops.channels.notice import Notice, public_url
from diagnosis.models import DiagnosisSession

PAYLOAD_VERSION = "1"


class WebhookChannel(Channel):
    name = "webhook"
    url_setting = "NOTIFY_URL"
    secret_setting = "NOTIFY_TOKEN"

    def payload(self, *, report: DiagnosisSession, notice: Notice) -> dict:
        return report_payload(report=report, event=notice.event)

    def request(self, *, url: str, secret: str | None, payload: dict, now: float) -> Outgoing:
        outgoing = super().request(url=url, secret=secret, payload=payload, now=now)
        if secret:
            outgoing = replace(outgoing, headers=outgoing.headers | {"Authorization": f"Bearer {secret}"})
        return outgoing

    def refusal(self, *, status: int, text: str) -> str:
        return http_refusal(status, text)

    def shown_url(self, url: str) -> str:
        """The team's own receiver, its path too; without a password or query that may carry one."""
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def report_payload(*, report: DiagnosisSession, event: str) -> dict:
    """The versioned notification body: the report and each of its alerts with its verdict."""
    return {
        "version": PAYLOAD_VERSION,
        "report_id": report.session_id,
        "status": event,
        "url": public_url(report.session_id),
        "alerts": [
            {
                "fingerprint": alert.get("fingerprint", ""),
                "starts_at": alert.get("starts_at"),
                "ends_at": alert.get("ends_at"),
                "alert_name": alert["alert_name"],
                "labels": alert.get("labels") or {},
                "state": alert["state"],
                "verdict": alert.get("verdict"),
                "output_type": alert.get("output_type"),
                "summary": alert.get("summary") or alert.get("not_analysed_reason") or "",
                "session_url": public_url(alert["session_id"]) if alert.get("session_id") else None,
                # A flapping group's count, first start and state; null otherwise.
                "flapping": alert.get("flapping"),
            }
            for alert in report.alert_scope.get("alerts") or []
        ],
    }
