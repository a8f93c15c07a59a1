"""The narrow demo question and its plan, shared by the llm engine's tests."""

from diagnosis.pipeline.contracts import ExecutorInput, PlannerOutput

QUERY = "只确认 order-service 是否存在 HighMemoryUsage 告警"
PLAN = {
    "goal": "确认 order-service 是否存在 HighMemoryUsage 告警",
    "steps": [{"tool": "query_alerts", "purpose": "确认告警是否 firing"}],
    "narrow_scope": True,
    "focus": ["order-service", "HighMemoryUsage"],
    "excluded_topics": [],
}


def executor_input() -> ExecutorInput:
    return ExecutorInput(query=QUERY, plan=PlannerOutput(**PLAN), round=1)
