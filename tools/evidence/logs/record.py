"""One log line; its ref text is the line as a reader would grep it."""

from __future__ import annotations

from typing import Any

from tools.evidence.record import EvidenceRecord


class LogLine(EvidenceRecord):
    timestamp: str = ""
    level: str = ""
    service: str = ""
    message: str = ""
    labels: dict[str, Any] = {}

    def ref_text(self) -> str:
        return f"[{self.timestamp}][{self.level}][{self.service}] {self.message}"
