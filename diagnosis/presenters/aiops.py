"""An AIOps analysis's report head as the page shows it: each alert's outcome as a badge."""

from __future__ import annotations

from dataclasses import dataclass, replace

from diagnosis.presenters.evidence import widened
from diagnosis.selectors.aiops import AiOpsReport, AlertRow

# The report page's verdict badge per child outcome.
OUTCOME_TONES = {
    "verified": "good",
    "gaps": "warn",
    "degraded": "bad",
    "running": "none",
    "not_analysed": "none",
}
OUTCOME_LABELS = {
    "verified": "已核验",
    "gaps": "有证据缺口",
    "degraded": "已降级",
    "running": "诊断中",
    "not_analysed": "未分析",
}


@dataclass(frozen=True)
class AlertRowView(AlertRow):
    @property
    def where(self) -> list[str]:
        return [f"{name}={value}" for name, value in sorted(self.identity.items())]

    @property
    def outcome_label(self) -> str:
        return OUTCOME_LABELS[self.outcome]

    @property
    def outcome_tone(self) -> str:
        return OUTCOME_TONES[self.outcome]


def aiops_report_view(report: AiOpsReport) -> AiOpsReport:
    return replace(report, rows=[widened(AlertRowView, row) for row in report.rows])
