"""`first`: which alert fired first, and when — over the asked window (every alert that fired in it,
with Prometheus), else among the alerts firing now. An alert that fires by design (a dead man's
switch) is named as such and never the first."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.fired import ALWAYS_FIRING_SHORT, fired_in_window, fired_query, over_window
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.shared import failure, no_hit
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import ALERTS
from tools.evidence.result import ToolResult


class First(AskKind):
    name = "first"
    label = "最先触发的告警"
    words = "first"
    per_subject = False
    answers = frozenset({"which", "when", "what"})

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        call = fired_query(ask, world)
        return [call] if call else []

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        window = fired_in_window(ask, results, world)
        result = window.result
        if result is None or not result.success:
            return failure(result, ask, world.unconfigured(ALERTS) or "未能查询告警状态")
        label = ask.window.label if over_window(ask) else "当前触发的告警中"
        ranked = [f for f in window.fired if not f.always]
        always = [f for f in window.fired if f.always]
        aside = "；".join(f"{f.alert_name} 是{ALWAYS_FIRING_SHORT}" for f in always)
        if not ranked:
            nothing = no_hit(result)
            bindings = [f.binding for f in always] or ([nothing] if nothing else [])
            said = f"只有{aside}" if always else "没有告警触发"
            return Slot(
                ask=ask,
                filled=bool(bindings),
                conclusion=f"{label}{said}",
                source=window.source,
                limits=window.limits,
                bindings=bindings,
                why="" if bindings else "告警查询没有可引用的结果",
            )
        first = ranked[0]
        # Already firing when the window began, with no start known: the order among those is unknown.
        # Alerts that began at the same instant (rules evaluated together) are first together.
        tied = (
            [f for f in ranked if f.before_window and f.began is None]
            if first.began is None
            else [f for f in ranked if f.began == first.began]
        )
        names = "、".join(f.text(label) for f in tied)
        said = (
            f"{label}最先触发的是 {names}"
            if len(tied) == 1
            else f"{label}同时最先触发的是 {names}"
            if first.began is not None
            else f"{label}开始前已在触发（先后未知）：{names}"
        )
        return Slot(
            ask=ask,
            filled=True,
            conclusion=said + (f"；{aside}" if aside else ""),
            source=window.source,
            limits=window.limits,
            bindings=[f.binding for f in [*tied, *always]],
        )
