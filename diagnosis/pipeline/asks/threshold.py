"""`threshold`: what X's threshold is — the comparison of the alert rule's `expr` (operator and
number, read with the PromQL parser) and how far the value is past it."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, SlotWorld
from diagnosis.pipeline.asks.shared import (
    MAX_LISTED,
    alert_found,
    failure,
    on_topic_found,
    past_threshold,
    source_of,
)
from diagnosis.pipeline.slot import Slot
from tools.evidence.result import ToolResult
from tools.numbers import number_text
from tools.promql import comparison_of


class Threshold(AskKind):
    name = "threshold"
    label = "阈值"
    words = "threshold"
    answers = frozenset({"quantity", "what"})

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        alerts, result = alert_found(ask, results)
        lines, bindings = [], []
        for f in on_topic_found(alerts, ask, world.vocabulary)[:MAX_LISTED]:
            record = f.record
            comparison = comparison_of(record.expr or "")
            if comparison:
                text = f"{record.alert_name} 的阈值：{comparison.series} {comparison.operator} {comparison.threshold_text}（告警规则 expr）"
                text += past_threshold(record.value, comparison.operator, comparison.threshold)
            elif record.threshold:
                text = f"{record.alert_name} 的阈值 {record.threshold}"
                if record.value not in (None, ""):
                    text += f"，当前值 {number_text(str(record.value))}"
            else:
                continue
            lines.append(text)
            bindings.append(f.binding)
        if not lines:
            return failure(result, ask, "告警记录没有规则表达式或阈值" if alerts else "没有找到所问的告警")
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{'；'.join(lines)}",
            source=source_of(result),
            bindings=bindings,
        )
