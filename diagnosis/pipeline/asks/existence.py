"""`existence`: is X firing — yes or no for that alert, with its state and current value."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, SlotWorld
from diagnosis.pipeline.asks.shared import MAX_LISTED, alert_found, alert_text, failure, no_hit, source_of
from diagnosis.pipeline.slot import Slot
from tools.evidence.registry import ALERTS
from tools.evidence.result import ToolResult


class Existence(AskKind):
    name = "existence"
    label = "是否存在"
    words = "existence"
    answers = frozenset({"whether", "what", "when"})

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        found, result = alert_found(ask, results)
        if result is None or not result.success:
            return failure(result, ask, world.unconfigured(ALERTS) or "未能查询告警状态")
        source = source_of(result)
        if not found:
            nothing = no_hit(result)
            on = f"（{ask.service}）" if ask.service else ""
            return Slot(
                ask=ask,
                filled=nothing is not None,
                conclusion=f"否，未发现 {ask.subject} 告警{on}",
                source=source,
                bindings=[nothing] if nothing else [],
                why="" if nothing else "未能查询告警状态",
            )
        parts = [f"{alert_text(f.record)}" for f in found[:MAX_LISTED]]
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"是，{'；'.join(parts)}",
            source=source,
            bindings=[f.binding for f in found[:MAX_LISTED]],
        )
