"""`priority`: which alert first — the firing alerts in `list`'s order, the first named as the one
to handle first."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, SlotWorld
from diagnosis.pipeline.asks.listing import firing_ranked
from diagnosis.pipeline.asks.shared import Found, alert_text
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.result import ToolResult


class Priority(AskKind):
    name = "priority"
    label = "处理优先级"
    words = "priority"
    answers = frozenset({"which", "what"})
    per_subject = False

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        return firing_ranked(ask, results, world, _first_and_rest)


def _first_and_rest(shown: list[Found[AlertRecord]], firing: list[Found[AlertRecord]]) -> str:
    first, *rest = shown
    text = f"最需要先处理：{alert_text(first.record)}"
    return text + (f"；其后：{'；'.join(alert_text(f.record) for f in rest)}" if rest else "")
