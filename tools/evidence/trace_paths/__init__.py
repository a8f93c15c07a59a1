"""The trace paths kind: which step came next after each step of sampled traces (a span began, a line
was written in one)."""
