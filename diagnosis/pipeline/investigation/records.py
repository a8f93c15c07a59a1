"""What alerts and log lines say moved, where they are the evidence (a world without a metrics
source, or beside one): a firing alert from its start (its threshold → its value), and a log
message pattern whose number moved across its lines (the oldest line's number → the newest's).

Every number is quoted from the record it cites; an alert's start is a derived time the gatekeeper
computes again from the alert record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from diagnosis.pipeline.contracts import EvidenceBinding, RankedCandidate
from diagnosis.pipeline.facts import unsupported_facts
from diagnosis.pipeline.investigation.conclusion import Said
from diagnosis.pipeline.investigation.said import time_said
from diagnosis.pipeline.slot import DerivedNumber, TimelineMark
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.logs.record import LogLine
from tools.evidence.registry import ALERTS, LOGS
from tools.evidence.result import ToolResult
from tools.numbers import number_text

ALERT_TIME = "%Y-%m-%d %H:%M:%S"
# What an alert counts for, by severity; a log pattern's moving number counts 1 and up to 1 more.
SEVERITY_WEIGHT = {"critical": 2.0, "error": 1.8, "warning": 1.5}
TREND_WEIGHT = 1.0
ON_TOPIC = 1.0
# A pattern needs this many lines to move, and its number this share of the first to have moved.
TREND_LINES = 3
TREND_SHARE = 0.02
# The most lines of one pattern a timeline draws.
DRAWN_LINES = 60
# A number in a message, with the unit written right after it.
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(\s*(?:%|ms|s|GB|MB|KB|次|条))?")
DIGITS = re.compile(r"\d+(?:\.\d+)?")
# An alert without a threshold or value went from normal to firing.
NORMAL, FIRING = "正常", "firing"


@dataclass
class RecordMove:
    subject: str
    mechanism: str
    onset: datetime
    before: str
    after: str
    weight: float
    bindings: list[EvidenceBinding] = field(default_factory=list)
    derived: list[DerivedNumber] = field(default_factory=list)
    # What its timeline draws (every line of a pattern, not only the two cited); its bindings when empty.
    drawn: list[EvidenceBinding] = field(default_factory=list)

    def said(self) -> Said:
        onset = time_said(self.onset)
        text = f"{self.subject}（{self.mechanism}，{onset}起，{self.before} → {self.after}）"
        mark = TimelineMark(label=text, onset=self.onset, bindings=list(self.drawn or self.bindings))
        return Said(
            text=text,
            bindings=list(self.bindings),
            derived=list(self.derived),
            onset=self.onset,
            marks=[mark],
            candidates=[
                RankedCandidate(
                    subject=self.subject,
                    mechanism=self.mechanism,
                    onset=onset,
                    before=self.before,
                    after=self.after,
                    bindings=list(self.bindings),
                )
            ],
        )


def record_moves(
    results: Sequence[ToolResult], *, subject: str = "", on_topic: Callable[[str], bool] = lambda _: False
) -> list[RecordMove]:
    """The alerts and log patterns of the results (of `subject` when given) that moved, weightiest
    first; an alert `on_topic` (the asked topic's: a restart alert for "why restarting") counts more."""
    moves = [*_alert_moves(results, subject, on_topic), *_trend_moves(results, subject)]
    return sorted(moves, key=lambda m: (-m.weight, m.onset))


def alert_started(alert: AlertRecord) -> datetime | None:
    """An alert's start as its record writes it (the tools' local time)."""
    try:
        return datetime.strptime(alert.active_at, ALERT_TIME).astimezone()
    except ValueError:
        return None


def _alert_moves(
    results: Sequence[ToolResult], subject: str, on_topic: Callable[[str], bool]
) -> list[RecordMove]:
    moves: dict[tuple[str, str], RecordMove] = {}
    for result in results:
        if not result.success or not ALERTS.owns(result.tool_name):
            continue
        for record, ref in result.cited():
            if not isinstance(record, AlertRecord) or record.state != "firing":
                continue
            if subject and record.service != subject:
                continue
            started = alert_started(record)
            if started is None:
                continue
            # Its threshold → its value where the record states them; else from normal to firing.
            before = _said(record.threshold) or NORMAL
            after = _said(record.value) or FIRING
            if unsupported_facts(f"{before} {after}", [ref.text]):
                before, after = NORMAL, FIRING
            binding = EvidenceBinding.of_ref(result, ref)
            onset = time_said(started)
            moves.setdefault(
                (record.service, record.alert_name),
                RecordMove(
                    subject=record.subject(),
                    mechanism=f"{record.alert_name} 告警触发",
                    onset=started,
                    before=before,
                    after=after,
                    weight=SEVERITY_WEIGHT.get(record.severity.lower(), 1.0)
                    + (ON_TOPIC if on_topic(record.alert_name) else 0),
                    bindings=[binding],
                    derived=[
                        DerivedNumber(
                            binding=binding, statistic="alert_start", start=started, end=started, said=onset
                        )
                    ],
                ),
            )
    return list(moves.values())


def _trend_moves(results: Sequence[ToolResult], subject: str) -> list[RecordMove]:
    """A message pattern (its numbers masked) of one service whose first number moved from its oldest
    line to its newest."""
    lines: dict[tuple[str, str], dict[str, tuple[LogLine, ToolResult, object]]] = {}
    for result in results:
        if not result.success or not LOGS.owns(result.tool_name):
            continue
        for record, ref in result.cited():
            if not isinstance(record, LogLine) or (subject and record.service != subject):
                continue
            pattern = DIGITS.sub("#", record.message)
            key = f"{record.timestamp}|{record.message}"
            lines.setdefault((record.service, pattern), {})[key] = (record, result, ref)
    moves = []
    for (service, _), found in lines.items():
        ordered = sorted(found.values(), key=lambda item: item[0].timestamp)
        numbered = [
            (line, result, ref, match)
            for line, result, ref in ordered
            if (match := NUMBER.search(line.message))
        ]
        if len(numbered) < TREND_LINES:
            continue
        (first, first_result, first_ref, start), (_, last_result, last_ref, end) = numbered[0], numbered[-1]
        low, high = float(start[1]), float(end[1])
        if low == high or abs(high - low) < TREND_SHARE * max(abs(low), 1e-9):
            continue
        onset = _line_time(first)
        if onset is None:
            continue
        prefix = first.message[: start.start()].rstrip(" :：=")
        moves.append(
            RecordMove(
                subject=service,
                mechanism=f"日志「{prefix}」{'升高' if high > low else '下降'}",
                onset=onset,
                before=start.group(0).strip(),
                after=end.group(0).strip(),
                weight=TREND_WEIGHT + min(1.0, abs(high - low) / max(abs(low), 1e-9) * 10),
                bindings=[
                    EvidenceBinding.of_ref(first_result, first_ref),
                    EvidenceBinding.of_ref(last_result, last_ref),
                ],
                drawn=[
                    EvidenceBinding.of_ref(result, ref)
                    for _, result, ref, _ in [numbered[0], *numbered[1:][1 - DRAWN_LINES :]]
                ],
            )
        )
    return moves


def _said(value: object) -> str:
    if value in (None, ""):
        return ""
    text = str(value).strip()
    match = NUMBER.fullmatch(text)
    return f"{number_text(match[1])}{(match[2] or '').strip()}" if match else ""


def _line_time(line: LogLine) -> datetime | None:
    try:
        return datetime.strptime(line.timestamp[:19], ALERT_TIME).astimezone()
    except ValueError:
        return None
