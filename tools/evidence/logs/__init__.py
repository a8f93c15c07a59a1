"""Evidence kind: log lines (record, source protocol, tool; its row in `tools.evidence.registry`)."""
