"""The logs kind's records: one log line (its ref text is the line as a reader would grep it), and a
count of lines (its ref text says what was counted, the number and the query as sent)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import SAMPLE_CHARS, bounded, clip

LEVEL_ORDER = {"FATAL": 0, "ERROR": 1, "WARN": 2, "WARNING": 2, "INFO": 3}
DIGITS = re.compile(r"\d+(?:\.\d+)?")
# How much of a counted line a count's ref text quotes.
LINE_CHARS = 300


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


class LogCount(EvidenceRecord):
    """Log lines counted over a window (a LogQL metric query, or the lines a source served): slow lines
    with the slowest, access lines by path or status, error lines by class. No group is the total.
    Its ref text says what was counted, the count and how (the LogQL as sent)."""

    service: str = ""
    measure: str = ""
    status: str = ""
    slower_than_ms: str = ""
    minutes: int = 0
    group: dict[str, str] = {}
    count: int = 0
    slowest_ms: str = ""
    # The slowest line, or a group's newest line.
    line: str = ""
    query: str = ""
    # `window`, or `sample:<n>` when counted over the newest n lines a source served.
    counted_over: str = ""

    def counted(self) -> str:
        """What lines were counted, in words: `耗时超过 1000 ms 的日志`, `状态码 404 的访问日志`."""
        if self.measure == "slow":
            return f"耗时超过 {self.slower_than_ms} ms 的日志"
        if self.measure == "class":
            return "错误日志"
        return f"状态码 {self.status} 的访问日志" if self.status else "访问日志"

    def how(self) -> str:
        """How it was counted: the LogQL as sent, and the sample of lines counted in code, if any."""
        said = [f"LogQL {self.query}"] if self.query else []
        if self.counted_over.startswith("sample:"):
            said.append(f"按最新 {self.counted_over.partition(':')[2]} 条日志统计")
        return "；".join(said) or "窗口内全部日志"

    def ref_text(self) -> str:
        scope = f"[最近 {self.minutes} 分钟][{self.service or '所有服务'}]"
        group = " ".join(f"{name}={value}" for name, value in self.group.items())
        text = f"{scope} {self.counted()}{f' {group}' if group else ''}：{self.count} 条"
        if self.slowest_ms:
            text += f"，最慢 {self.slowest_ms} ms"
        if self.line:
            text += f"，如「{clip(self.line, LINE_CHARS)}」"
        return f"{text}（{self.how()}）"

    @classmethod
    def summary(cls, records: Sequence[LogCount], *, budget: int) -> str:
        return bounded(
            "log_counts: ", [clip(record.ref_text(), SAMPLE_CHARS) for record in records], budget, "组"
        )
