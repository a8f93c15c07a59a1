"""`cause`: why — the subject's symptoms (firing alerts, lines with the asked property) and, when
both are there, an inference linking them labelled as such; else what was searched and not found.
Code only hedges: the reasoning is left open to the executor (`reasoned`)."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.logs import log_search, log_slot
from diagnosis.pipeline.asks.shared import alert_found, alert_text, failure
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult


class Cause(AskKind):
    name = "cause"
    label = "原因"
    words = "cause"
    reasoned = True

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        return log_search(ask, alerts=alerts, world=world)

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        alerts, alert_message = alert_found(ask, results)
        logs = log_slot(ask, results, world, wanted=ask.topic or "error")
        firing = [f for f in alerts if f.record.state == "firing"][:3]
        about = ask.subject or "所问对象"
        if not firing and not logs.filled:
            return failure(alert_message, ask, f"未找到原因证据（已检索 {about} 的告警与日志）")
        # Lines found are symptoms; a search that found none is said beside them, never as one.
        lines_found = logs.filled and any(b.raw_path != NO_EVIDENCE_PATH for b in logs.bindings)
        symptoms = [alert_text(f.record) for f in firing]
        if lines_found:
            symptoms.append(logs.conclusion)
        inference = (
            f"。推断（未证实）：{firing[0].record.alert_name} 与同期日志可能相关，需人工确认"
            if firing and lines_found
            else ""
        )
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{about} 的现象：{'；'.join(symptoms)}{inference}",
            limits=[] if lines_found else [logs.conclusion],
            bindings=[*(f.binding for f in firing), *(logs.bindings if lines_found else [])],
        )
