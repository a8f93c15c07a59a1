"""What a source is called where people read it (`ToolInvocation.source` → "Loki", the demo world →
演示数据). Django-free, so the code that writes a sentence naming its source (the recorder's no-hit,
the pipeline's slot and gap lines) writes the name people read, and nothing rewrites it later."""

from __future__ import annotations

DEMO = "demo"
# What the demo world is called wherever a source is named: never mistaken for the team's system.
DEMO_LABEL = "演示数据"

# A source not listed here is named as recorded (a plugin's, a runbook's document).
SOURCE_NAMES = {
    DEMO: DEMO_LABEL,
    "prometheus": "Prometheus",
    "alertmanager": "Alertmanager",
    "alertmanager+prometheus": "Alertmanager",
    "loki": "Loki",
    "runbooks": "处理手册库",
    "fixture": "评测数据",
}


def source_name(source: str) -> str:
    return SOURCE_NAMES.get(source, source)
