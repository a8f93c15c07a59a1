"""The clock: the current time, a helper that gathers no evidence (tool; its row in `tools.evidence.registry`)."""
