"""The alerts that fired in an asked window, and when each began: read by `list` over a window
("过去 30 分钟哪些告警") and by `first` ("最先触发哪条").

With Prometheus, from one instant query over the raw `ALERTS{alertstate="firing"}` samples of the
window: the time of each alert's first firing sample (`min_over_time(timestamp(…)[30m:1s])`), so every
alert that fired in it is there, one that fired and resolved between two points of a range query too;
an alert already firing when the window began is said so, with its start where the alert query knows
it, and one the alert query no longer shows has resolved. Without Prometheus, from the alert query
alone: the alerts firing now, each from its start, and the limit said (an alert that fired and resolved
in the window is not there to see). Alerts that fire by design (a dead man's switch) are named as such
and never ranked first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from diagnosis.pipeline.always_firing import fires_always, record_fires_always
from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import Call, SlotWorld
from diagnosis.pipeline.asks.shared import Found, alert_found, decimal_of, found_in, results_of, source_of
from diagnosis.pipeline.contracts import EvidenceBinding
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import SERIES
from tools.evidence.result import ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.promql import quoted

FIRING_SERIES = 'min_over_time(timestamp(ALERTS{alertstate="firing"%s})[%dm:%ds])'
# The subquery reads the window at most this many points, and never coarser than a second: every rule
# evaluation of a window up to half an hour, a minute's precision over a day.
SUBQUERY_POINTS = 1800
ALWAYS_FIRING_SHORT = "始终触发的看门狗告警，不计入先后"
NO_HISTORY = "没有告警历史（需要 Prometheus）：只列出当前仍在触发的告警，窗口内触发后已恢复的看不到"
# Labels of an `ALERTS` series that are no part of the alert's identity.
SERIES_ONLY = frozenset({"__name__", "alertstate"})
TIME_FORMAT = "%H:%M:%S"
# Times as the tools print them: local, without a zone (`tools.clock.local_text`, series samples).
RECORD_TIME = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Fired:
    """One alert that fired in the window."""

    alert_name: str
    service: str
    severity: str
    # When it began firing (local time), as far as the sources say: in the window, or (already firing
    # when the window began) its start from the alert query, None when unknown.
    began: datetime | None
    # It was already firing when the window began.
    before_window: bool
    still_firing: bool
    always: bool
    binding: EvidenceBinding

    def text(self, window_label: str) -> str:
        where = f"{self.service} 的 " if self.service else ""
        details = "，".join(part for part in (self.severity, self._when(window_label)) if part)
        if self.always:
            return f"{where}{self.alert_name}（{ALWAYS_FIRING_SHORT}）"
        return f"{where}{self.alert_name}（{details}）"

    def _when(self, window_label: str) -> str:
        since = f"{_clock(self.began)} 起" if self.began else ""
        if self.before_window:
            return f"{window_label}开始前已在触发" + (f"，{since}" if since else "")
        ended = "" if self.still_firing else "，已恢复"
        return f"{since}{ended}"

    def order(self) -> tuple[bool, datetime]:
        """Earliest first (a start unknown before any known); one that fires by design last."""
        return self.always, self.began or datetime.min


def over_window(ask: Ask) -> bool:
    """The ask names a window up to now ("过去 30 分钟"); one that ended before now ("昨天") is the
    alerts' history (`asks.history`)."""
    return ask.window.asked and not ask.window.end_minutes_ago


def fired_query(ask: Ask, world: SlotWorld) -> Call | None:
    """The range query of the firing alerts over the asked window (None without Prometheus, or
    without a window up to now)."""
    if SERIES.tool not in world.tools or not over_window(ask):
        return None
    if ask.subject_kind == "alert":
        selectors = [f',alertname="{quoted(ask.subject)}"']
    elif ask.subject_kind == "service" and ask.subject:
        selectors = [f',{label}="{quoted(ask.subject)}"' for label in world.service_labels]
    else:
        selectors = [""]
    minutes = ask.window.minutes
    step = max(1, minutes * 60 // SUBQUERY_POINTS)
    query = " or ".join(FIRING_SERIES % (selector, minutes, step) for selector in selectors)
    return SERIES.tool, {"query": query, "minutes": 0}


@dataclass(frozen=True)
class FiredInWindow:
    fired: list[Fired]
    result: ToolResult | None
    limits: list[str]

    @property
    def source(self) -> str:
        return source_of(self.result) if self.result else ""


def fired_in_window(ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> FiredInWindow:
    """Every alert that fired in the ask's window, earliest first; from the range query when it was
    made and answered, else from the alerts firing now."""
    alerts, alert_result = alert_found(ask, results)
    query = fired_query(ask, world)
    ranged = next(
        (r for r in results_of(results, SERIES, lambda a: query is not None and a == query[1])), None
    )
    if ranged is not None:
        fired = _from_first_samples(ranged, alerts, ask, world)
        return FiredInWindow(sorted(fired, key=Fired.order), ranged, [])
    start = _local(world.now) - timedelta(minutes=ask.window.minutes)
    fired = [
        Fired(
            alert_name=f.record.alert_name,
            service=f.record.service,
            severity=str(f.record.severity or ""),
            began=(began := _parsed(f.record.active_at)),
            before_window=over_window(ask) and began is not None and began < start,
            still_firing=True,
            always=record_fires_always(f.record, world.vocabulary),
            binding=f.binding,
        )
        for f in alerts
        if f.record.state == "firing"
    ]
    limits = [NO_HISTORY] if over_window(ask) else []
    return FiredInWindow(sorted(fired, key=Fired.order), alert_result, limits)


def _from_first_samples(
    result: ToolResult, alerts: list[Found[AlertRecord]], ask: Ask, world: SlotWorld
) -> list[Fired]:
    """One alert per series: its first firing sample's time is the series' value."""
    if not result.success:
        return []
    start = _local(world.now) - timedelta(minutes=ask.window.minutes)
    step = max(1, ask.window.minutes * 60 // SUBQUERY_POINTS)
    fired = []
    for f in found_in(result, SERIES):
        record: SeriesRecord = f.record
        labels = {k: str(v) for k, v in (record.metric or {}).items() if k not in SERIES_ONLY}
        first_sample = decimal_of(record.sample()[1])
        if first_sample is None:
            continue
        name = labels.get("alertname", "")
        known = _record_of(labels, alerts)
        first = datetime.fromtimestamp(float(first_sample))
        # Its first sample in the window is the window's first point: it was firing before.
        before = (first - start).total_seconds() <= step
        began = (_parsed(known.record.active_at) if known else None) if before else first
        fired.append(
            Fired(
                alert_name=name,
                service=next((labels[label] for label in world.service_labels if labels.get(label)), ""),
                severity=labels.get("severity", ""),
                began=began,
                before_window=before,
                still_firing=known is not None and known.record.state == "firing",
                always=(known is not None and record_fires_always(known.record, world.vocabulary))
                or fires_always(name=name, severity=labels.get("severity", ""), vocabulary=world.vocabulary),
                binding=f.binding,
            )
        )
    return fired


def _record_of(labels: dict[str, str], alerts: list[Found[AlertRecord]]) -> Found[AlertRecord] | None:
    """The alert query's record of the alert a series is (its name, and its labels among the series')."""
    return next(
        (
            f
            for f in alerts
            if f.record.alert_name == labels.get("alertname")
            and {k: str(v) for k, v in (f.record.labels or {}).items()}.items() <= labels.items()
        ),
        None,
    )


def _parsed(text: str) -> datetime | None:
    """A record's time as the tools print it, or None."""
    try:
        return datetime.strptime(text, RECORD_TIME) if text else None
    except ValueError:
        return None


def _local(moment: datetime) -> datetime:
    """A moment as the tools print times: local, without a zone."""
    return datetime.fromtimestamp(moment.timestamp())


def _clock(moment: datetime) -> str:
    return moment.strftime(TIME_FORMAT)
