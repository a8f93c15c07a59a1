"""`list`: which alerts are firing — every firing alert, ordered by severity (critical > warning >
info > none), then by how far its value is past the threshold. `priority` words the same order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, SlotWorld
from diagnosis.pipeline.asks.shared import (
    MAX_LISTED,
    Found,
    alert_found,
    alert_text,
    decimal_of,
    failure,
    no_hit,
    source_of,
)
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import ALERTS
from tools.evidence.result import ToolResult
from tools.promql import comparison_of

# Severity order of `list` / `priority`: critical > warning > info > none.
SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}


class Listing(AskKind):
    name = "list"
    label = "告警列表"
    # `list` in the vocabulary file; `listing` on the model, where `list` would shadow the builtin.
    words = "listing"
    answers = frozenset({"which", "what", "quantity", "whether"})
    per_subject = False

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        return firing_ranked(
            ask,
            results,
            world,
            lambda shown, firing: (
                f"当前 {len(firing)} 个 firing 告警（按优先级）："
                + "；".join(f"{i}. {alert_text(f.record)}" for i, f in enumerate(shown, 1))
            ),
        )


def firing_ranked(
    ask: Ask,
    results: Sequence[ToolResult],
    world: SlotWorld,
    said: Callable[[list[Found[AlertRecord]], list[Found[AlertRecord]]], str],
) -> Slot:
    """The firing alerts in priority order, the first `MAX_LISTED` cited; `said(shown, firing)` words
    them."""
    found, result = alert_found(ask, results)
    if result is None or not result.success:
        return failure(result, ask, world.unconfigured(ALERTS) or "未能查询告警状态")
    firing = sorted((f for f in found if f.record.state == "firing"), key=_priority)
    if not firing:
        nothing = no_hit(result) or (found[0].binding if found else None)
        about = f"{ask.subject} " if ask.subject else ""
        return Slot(
            ask=ask,
            filled=nothing is not None,
            conclusion=f"未发现 {about}处于 firing 状态的告警",
            source=source_of(result),
            bindings=[nothing] if nothing else [],
            why="" if nothing else "告警查询没有可引用的结果",
        )
    shown = firing[:MAX_LISTED]
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{said(shown, firing)}",
        source=source_of(result),
        bindings=[f.binding for f in shown],
    )


def _priority(found: Found[AlertRecord]) -> tuple[int, Decimal]:
    """Severity first, then how far the value is past the threshold (further first)."""
    record = found.record
    rank = SEVERITY_RANK.get(str(record.severity).lower(), len(SEVERITY_RANK))
    comparison = comparison_of(record.expr or "")
    value = decimal_of(record.value)
    threshold = decimal_of(comparison.threshold if comparison else record.threshold)
    if value is None or threshold is None or threshold == 0:
        return rank, Decimal(0)
    return rank, -abs(value / threshold)
