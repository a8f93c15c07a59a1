"""Evidence kind: scrape targets (record, source protocol, tool; its row in `tools.evidence.registry`)."""
