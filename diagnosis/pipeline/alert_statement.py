"""An alert's observation as code writes it, in the tense of when it is told: while the alert fires
(`当前存在 …`) or after it resolved (`触发期间存在 …`). The tense is chosen from the record's parts
when the sentence is written, never by rewriting a written sentence."""

from __future__ import annotations

from tools.evidence.alerts.record import AlertRecord
from tools.numbers import number_text

FIRING = "firing"


def alert_observation(alert: AlertRecord, *, resolved: bool = False) -> str:
    """`billing 当前存在 X 告警（firing）：…，当前值 92`, or told after the alert resolved
    `billing 触发期间存在 X 告警（当时触发中）：…，当时的值 92`. The value is left out when the
    description already says it; an alert without a description reads "告警（firing），当前值 …"."""
    described = f"：{alert.description}" if alert.description else ""
    shows_value = alert.value not in (None, "") and str(alert.value) not in alert.description
    value = number_text(str(alert.value)) if shows_value else ""
    if resolved:
        state = "当时触发中" if alert.state == FIRING else alert.state
        value_text = f"，当时的值 {value}" if value else ""
        return f"{alert.service} 触发期间存在 {alert.alert_name} 告警（{state}）{described}{value_text}"
    value_text = f"，当前值 {value}" if value else ""
    return f"{alert.service} 当前存在 {alert.alert_name} 告警（{alert.state}）{described}{value_text}"
