"""One scrape target; its ref text names its job, instance, health and last error."""

from __future__ import annotations

from typing import Any

from tools.evidence.record import EvidenceRecord


class TargetRecord(EvidenceRecord):
    job: str = ""
    instance: str = ""
    health: str = ""
    last_error: str = ""
    last_scrape: str = ""
    scrape_url: str = ""
    labels: dict[str, Any] = {}

    def identity(self) -> str:
        return f'job="{self.job}" instance="{self.instance}"'

    def ref_text(self) -> str:
        text = f'job="{self.job}" instance="{self.instance}" health={self.health}'
        if self.last_error:
            text += f" lastError: {self.last_error}"
        return text
