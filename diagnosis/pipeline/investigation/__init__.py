"""Investigations by code (§23): the symptom's onset, the key signals of every service over a
baseline and the incident window (bounded range queries), how each series moved, the call graph,
and root-cause candidates ranked from them. Django-free; every number comes from a cited result."""
