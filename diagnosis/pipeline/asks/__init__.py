"""The kinds of ask, one module each, and the generic code that runs them.

A kind (`kind.AskKind`) says which vocabulary words ask it, which calls its slot needs and how its
slot is read from their results; `registry.KINDS` holds one row per kind. The runner is generic:
`reader` reads a question into asks, `calls` makes the calls the asks need, `slots` reads, verifies
and words their slots. Pure code over plain data.
"""
