"""The evidence kinds: one package each (record, source protocol, tool) and their registry."""
