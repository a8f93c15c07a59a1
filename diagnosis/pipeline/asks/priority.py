"""`priority`: which alert first — the firing alerts in `list`'s order, the first named as the one
to handle first."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, SlotWorld
from diagnosis.pipeline.asks.listing import firing_ranked, ranked_text
from diagnosis.pipeline.asks.shared import Found
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
        return firing_ranked(ask, results, world, lambda shown, firing: _first_and_rest(shown, world))


def _first_and_rest(shown: list[Found[AlertRecord]], world: SlotWorld) -> str:
    first, *rest = shown
    text = f"最需要先处理：{ranked_text(first.record, world)}"
    return text + (f"；其后：{'；'.join(ranked_text(f.record, world) for f in rest)}" if rest else "")
