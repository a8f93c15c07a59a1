"""`list`: which alerts are firing — every firing alert, ordered by severity (critical > warning >
info > none), then by how far its value is past the threshold; an alert that fires by design (a dead
man's switch) last, named as such. `priority` words the same order. Over an asked window ("过去 30
分钟哪些告警"): every alert that fired in it, earliest first, counted (`asks.fired`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from diagnosis.pipeline.always_firing import record_fires_always
from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.fired import ALWAYS_FIRING_SHORT, fired_in_window, fired_query, over_window
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
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
from tools.vocabulary import Vocabulary

# Severity order of `list` / `priority`: critical > warning > info > none.
SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}


class Listing(AskKind):
    name = "list"
    label = "告警列表"
    # `list` in the vocabulary file; `listing` on the model, where `list` would shadow the builtin.
    words = "listing"
    answers = frozenset({"which", "what", "quantity", "whether"})
    per_subject = False

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        call = fired_query(ask, world)
        return [call] if call else []

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        if over_window(ask):
            return fired_listed(ask, results, world)
        return firing_ranked(
            ask,
            results,
            world,
            lambda shown, firing: (
                f"当前 {len(firing)} 个 firing 告警（按优先级）："
                + "；".join(f"{i}. {ranked_text(f.record, world)}" for i, f in enumerate(shown, 1))
            ),
        )


def fired_listed(ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
    """Every alert that fired in the asked window, earliest first, with the count and when each began."""
    window = fired_in_window(ask, results, world)
    result = window.result
    if result is None or not result.success:
        return failure(result, ask, world.unconfigured(ALERTS) or "未能查询告警状态")
    label = ask.window.label
    about = f"{ask.subject} " if ask.subject else ""
    if not window.fired:
        nothing = no_hit(result)
        return Slot(
            ask=ask,
            filled=nothing is not None,
            conclusion=f"{label}未见 {about}告警触发",
            source=window.source,
            limits=window.limits,
            bindings=[nothing] if nothing else [],
            why="" if nothing else "告警查询没有可引用的结果",
        )
    still = sum(f.still_firing for f in window.fired)
    always = sum(f.always for f in window.fired)
    counted = f"{still} 条仍在触发" + (f"，含 {always} 条始终触发的看门狗告警" if always else "")
    shown = window.fired[:MAX_LISTED]
    listed = "；".join(f"{i}. {f.text(label)}" for i, f in enumerate(shown, 1))
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{label} {about}触发过 {len(window.fired)} 条告警（{counted}），按开始时间：{listed}",
        source=window.source,
        limits=window.limits,
        bindings=[f.binding for f in shown],
    )


def ranked_text(record: AlertRecord, world: SlotWorld) -> str:
    """An alert as a ranked list says it: one that fires by design named as such, in place of its
    severity and value (which rank nothing)."""
    if record_fires_always(record, world.vocabulary):
        return f"{record.service} 的 {record.alert_name} 告警（{ALWAYS_FIRING_SHORT}）"
    return alert_text(record)


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
    firing = sorted(
        (f for f in found if f.record.state == "firing"), key=lambda f: _priority(f, world.vocabulary)
    )
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


def _priority(found: Found[AlertRecord], vocabulary: Vocabulary) -> tuple[bool, int, Decimal]:
    """Severity first, then how far the value is past the threshold (further first); an alert that
    fires by design after every other, whatever its severity."""
    record = found.record
    always = record_fires_always(record, vocabulary)
    rank = SEVERITY_RANK.get(str(record.severity).lower(), len(SEVERITY_RANK))
    comparison = comparison_of(record.expr or "")
    value = decimal_of(record.value)
    threshold = decimal_of(comparison.threshold if comparison else record.threshold)
    if value is None or threshold is None or threshold == 0:
        return always, rank, Decimal(0)
    return always, rank, -abs(value / threshold)
