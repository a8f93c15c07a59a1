"""One log line; its ref text is the line as a reader would grep it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import SAMPLE_CHARS, bounded, clip

LEVEL_ORDER = {"FATAL": 0, "ERROR": 1, "WARN": 2, "WARNING": 2, "INFO": 3}
DIGITS = re.compile(r"\d+(?:\.\d+)?")


class LogLine(EvidenceRecord):
    timestamp: str = ""
    level: str = ""
    service: str = ""
    message: str = ""
    labels: dict[str, Any] = {}

    def ref_text(self) -> str:
        return f"[{self.timestamp}][{self.level}][{self.service}] {self.message}"

    @classmethod
    def summary(cls, records: Sequence[LogLine], *, budget: int) -> str:
        """One line per message pattern (numbers masked): the newest sample, and for a repeated
        pattern its count and oldest sample, so a trend keeps both ends."""
        unique = list({(log.timestamp, log.service, log.message): log for log in records}.values())
        patterns: dict[tuple, list[LogLine]] = {}
        for log in unique:
            key = (log.level, log.service, DIGITS.sub("#", log.message))
            patterns.setdefault(key, []).append(log)
        ordered = sorted(patterns.values(), key=lambda group: LEVEL_ORDER.get(group[0].level, 9))
        lines = []
        for group in ordered:
            newest, oldest = max(group, key=_timestamp), min(group, key=_timestamp)
            line = newest.short_text()
            if len(group) > 1:
                line += f"（同类 {len(group)} 条，最早 {oldest.short_text()}）"
            lines.append(line)
        levels = Counter(log.level for log in unique)
        counts = ", ".join(f"{level} {count}" for level, count in sorted(levels.items(), key=_level_rank))
        return bounded(f"log_evidence（共 {len(unique)} 条: {counts}）: ", lines, budget, "类日志")

    def short_text(self) -> str:
        """The line with its time of day and a clipped message, as a trace entry quotes it."""
        time_of_day = self.timestamp[11:16] or self.timestamp
        return f"[{time_of_day}][{self.level}][{self.service}] {clip(self.message, SAMPLE_CHARS)}"


def _timestamp(log: LogLine) -> str:
    return log.timestamp


def _level_rank(item: tuple[str, int]) -> int:
    return LEVEL_ORDER.get(item[0], 9)
