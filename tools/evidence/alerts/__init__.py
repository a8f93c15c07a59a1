"""Evidence kind: alerts known now (record, source protocol, tool; its row in `tools.evidence.registry`)."""
