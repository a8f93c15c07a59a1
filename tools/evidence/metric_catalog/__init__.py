"""The metric catalog: what metrics the metrics source holds, searched by a helper tool that gathers
no evidence (source protocol, tool; its row in `tools.evidence.registry`)."""
