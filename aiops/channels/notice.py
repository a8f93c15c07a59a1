"""What a chat message tells, before any channel's markup: the report's notice as plain text.

Every text here comes from the alerts (labels are anyone's input) or from the analysis (a model may
have written a finding): each channel escapes it for its own markup, or puts it where no markup is read.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.urls import reverse

from aiops.models import ReportDelivery
from aiops.report import REPORT_TITLE, AlertSubject, flapping_text, report_record_of, shown, status_text
from diagnosis.models import DiagnosisSession

Event = ReportDelivery.Event
# A chat message lists this many alerts; the rest are counted and the report's link shows them all.
MOST_ALERTS_LISTED = 10
# One line of a message: a finding longer than this is cut (the report has it whole).
LINE_CHARS = 500


@dataclass(frozen=True)
class NoticeAlert:
    label: str
    state: str
    severity: str
    # The alert's one-line outcome (its verdict and first verified finding), or why it was not analysed.
    conclusion: str
    # `自 … 起反复触发 5 次，仍在反复` for a flapping group; "" otherwise.
    flapping: str
    # The alert's own session; "" when it was not analysed or the site has no address to link with.
    session_url: str
    session_id: str

    @property
    def state_line(self) -> str:
        parts = [f"状态 {self.state}", f"级别 {self.severity or '—'}"]
        if self.flapping:
            parts.append(self.flapping)
        return " · ".join(parts)


@dataclass(frozen=True)
class Notice:
    event: str
    title: str
    # The opening line: the one alert's outcome, the report's status over several, or the flapping
    # group's count and state for a flapping or settled notice.
    conclusion: str
    alerts: tuple[NoticeAlert, ...]
    report_url: str
    report_id: str

    @property
    def firing(self) -> bool:
        return any(alert.state == "firing" for alert in self.alerts)

    @property
    def listed(self) -> tuple[NoticeAlert, ...]:
        return self.alerts[:MOST_ALERTS_LISTED]

    def alert_conclusion(self, alert: NoticeAlert) -> str:
        """The alert's own outcome line, "" when the message already opens with it."""
        return "" if alert.conclusion == self.conclusion else alert.conclusion

    def unlisted_line(self, listed: int) -> str:
        rest = len(self.alerts) - listed
        return f"另有 {rest} 条告警未列出，见完整报告。" if rest > 0 else ""


def notice_build(*, report: DiagnosisSession, event: str) -> Notice:
    """The notice of `report` for `event`, its alerts most urgent first (as the report lists them)."""
    alerts = tuple(_notice_alert(alert) for alert in report.alert_scope.get("alerts") or [])
    return Notice(
        event=event,
        title=_title(event, alerts),
        conclusion=_conclusion(report, event, alerts),
        alerts=alerts,
        report_url=public_url(report.session_id),
        report_id=report.session_id,
    )


def public_url(session_id: str) -> str:
    """The session's page as receivers reach it: absolute behind TLS (`PUBLIC_URL`), else relative."""
    return settings.DIAGNOSIS.get("PUBLIC_URL", "") + reverse("chat-conversation", args=[session_id])


def clipped(text: str, chars: int = LINE_CHARS) -> str:
    """One line of at most `chars` characters: a label's newline must not start a heading or a list."""
    line = " ".join(text.split())
    return line if len(line) <= chars else line[: chars - 1] + "…"


def _notice_alert(alert: dict) -> NoticeAlert:
    session_id = alert.get("session_id") or ""
    return NoticeAlert(
        label=AlertSubject.of(alert).label,
        state=alert["state"],
        severity=shown(str((alert.get("labels") or {}).get("severity") or "")),
        conclusion=clipped(alert.get("summary") or alert.get("not_analysed_reason") or ""),
        flapping=flapping_text(alert["flapping"]) if alert.get("flapping") else "",
        session_url=public_url(session_id) if session_id else "",
        session_id=session_id,
    )


def _title(event: str, alerts: tuple[NoticeAlert, ...]) -> str:
    subject = REPORT_TITLE
    if alerts:
        subject = alerts[0].label + (f" 等 {len(alerts)} 条告警" if len(alerts) > 1 else "")
    return clipped(f"【{Event(event).label}】{subject}", 150)


def _conclusion(report: DiagnosisSession, event: str, alerts: tuple[NoticeAlert, ...]) -> str:
    if event in {Event.FLAPPING, Event.SETTLED}:
        groups = [f"{alert.label}：{alert.flapping}" for alert in alerts if alert.flapping]
        if groups:
            return clipped("；".join(groups))
    if len(alerts) == 1:
        return alerts[0].conclusion
    record = report_record_of(report.answer_record or {})
    if record is None:
        return f"{len(alerts)} 条告警，详见报告。"
    return status_text(record.analyses, not_analysed_count=len(record.not_analysed))
