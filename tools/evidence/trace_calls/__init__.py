"""The trace calls kind: which calls each operation's spans made, read from sampled traces."""
