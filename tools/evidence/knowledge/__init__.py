"""Evidence kind: runbook sections and past cases (record, source protocol, tool; its row in `tools.evidence.registry`)."""
