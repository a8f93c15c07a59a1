"""`health`: is a scrape target down — `up` per target, and the failing ones' `lastError`."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.shared import MAX_LISTED, failure, found_in, results_of, source_of, unfilled
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import TARGETS
from tools.evidence.result import ToolResult


class Health(AskKind):
    name = "health"
    label = "抓取目标健康状况"
    words = "health"
    answers = frozenset({"which", "whether", "what"})
    per_subject = False

    def alerts_first(self, ask: Ask) -> bool:
        return False

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        return [(TARGETS.tool, {})] if TARGETS.tool in world.tools else []

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        result = next(iter(results_of(results, TARGETS)), None)
        if result is None:
            return unfilled(ask, "抓取目标的健康状况需要 Prometheus 数据源（未配置）")
        found = found_in(result, TARGETS)
        if not found:
            return failure(result, ask, "Prometheus 没有返回抓取目标")
        down = [f for f in found if f.record.health != "up"]
        if not down:
            text = f"{len(found)} 个抓取目标全部 up"
            cited = found[:MAX_LISTED]
        else:
            listed = "；".join(
                f"{f.record.job} {f.record.instance}（{f.record.health}，lastError：{f.record.last_error or '无'}）"
                for f in down[:MAX_LISTED]
            )
            text = f"{len(found)} 个抓取目标中 {len(down)} 个不健康：{listed}"
            cited = down[:MAX_LISTED]
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{text}",
            source=source_of(result),
            bindings=[f.binding for f in cited],
        )
