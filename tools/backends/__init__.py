"""Tool backends, chosen per tool by `settings.DIAGNOSIS["TOOL_BACKENDS"]` (dotted class paths).

A backend class is instantiated per call and answers the tools it serves:

- `query_alerts(*, service, alert_name, now) -> list[dict]` for `query_metrics`
- `query_logs(*, query, service, topic, now) -> list[dict]` for `query_logs`: every match, newest first
- `knowledge_blocks() -> list[tools.retrieval.KnowledgeBlock]` for `lookup_knowledge`: every
  runbook and past-case block it knows (the tool ranks them with `tools.retrieval`)

Records carry their tool's output fields. No match is an empty list, never a placeholder.
"""
