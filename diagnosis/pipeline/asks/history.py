"""`history`: how often X fired — its episodes in the window, counted from Prometheus'
`ALERTS_FOR_STATE`, flapping from `FLAPPING_EPISODES`; or the limit of what Prometheus keeps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.shared import (
    MAX_LISTED,
    MAX_RANGE_MINUTES,
    Found,
    decimal_of,
    failure,
    found_in,
    no_hit,
    results_of,
    retention_limits,
    source_of,
    unfilled,
)
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import SERIES
from tools.evidence.result import ToolResult
from tools.promql import quoted

# Episodes in the window from which an alert is flapping.
FLAPPING_EPISODES = 3


class History(AskKind):
    name = "history"
    label = "触发历史"
    words = "history"
    answers = frozenset({"quantity", "whether", "when", "which", "what"})

    def alerts_first(self, ask: Ask) -> bool:
        return ask.subject_kind == "service"

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        if SERIES.tool not in world.tools:
            return []
        return [(SERIES.tool, {"query": _history_query(ask, world), "minutes": 0})]

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        result = next(
            iter(results_of(results, SERIES, lambda a: "ALERTS_FOR_STATE" in a.get("query", ""))),
            None,
        )
        if result is None:
            return unfilled(ask, "告警历史需要 Prometheus 数据源（未配置），只能看到当前告警")
        if not result.success:
            return failure(result, ask, "")
        # changes(ALERTS_FOR_STATE[w]) + 1 per alert series: its episodes in the window.
        episodes: Counter[str] = Counter()
        cited: list[Found] = []
        for f in found_in(result, SERIES):
            changes = decimal_of(f.record.sample()[1])
            if changes is not None:
                episodes[(f.record.metric or {}).get("alertname", "")] += int(changes) + 1
                cited.append(f)
        # The episodes Prometheus still holds: a window beyond its retention is counted for the part it keeps.
        limits = retention_limits(ask, result)
        about = ask.subject or "所有告警"
        if not episodes:
            nothing = no_hit(result)
            return Slot(
                ask=ask,
                filled=nothing is not None,
                conclusion=f"{ask.window.label}未见 {about} 的告警触发记录",
                source=source_of(result),
                limits=limits,
                bindings=[nothing] if nothing else [],
                why="" if nothing else "告警历史查询没有可引用的结果",
            )
        lines = [
            f"{alert} 触发 {count} 次" + ("，反复触发（flapping）" if count >= FLAPPING_EPISODES else "")
            for alert, count in episodes.most_common(MAX_LISTED)
        ]
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{ask.window.label} {about}：{'；'.join(lines)}",
            source=source_of(result),
            limits=limits,
            bindings=[f.binding for f in cited[:MAX_LISTED]],
        )


def _history_query(ask: Ask, world: SlotWorld) -> str:
    """`ALERTS_FOR_STATE` holds each active alert's activeAt, a new value per episode: its changes over
    the window, plus one, count the episodes exactly, whatever the range query's step would miss."""
    window = f"[{min(MAX_RANGE_MINUTES, ask.window.minutes)}m]"
    offset = f" offset {ask.window.end_minutes_ago}m" if ask.window.end_minutes_ago else ""
    if ask.subject_kind == "alert":
        selectors = [f'alertname="{quoted(ask.subject)}"']
    elif ask.subject_kind == "service" and ask.subject:
        selectors = [f'{label}="{quoted(ask.subject)}"' for label in world.service_labels]
    else:
        selectors = [""]
    return " or ".join(f"changes(ALERTS_FOR_STATE{{{s}}}{window}{offset})" for s in selectors)
