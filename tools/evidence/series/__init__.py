"""Evidence kind: PromQL series (record, source protocol, tool; its row in `tools.evidence.registry`)."""
