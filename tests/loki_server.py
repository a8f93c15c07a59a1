"""The Loki stand-in of the tests (`diagnosis.evaluation.loki`), its lines placed relative to start-up."""

from __future__ import annotations

import time

from diagnosis.evaluation.logql import NS
from diagnosis.evaluation.loki import LokiServer


class FakeLoki(LokiServer):
    """Streams `[{"stream": labels, "lines": [{"seconds_ago", "line"}]}]` relative to start-up."""

    def __init__(self, streams: list[dict], *, tenant: str | None = None) -> None:
        now_ns = time.time_ns()
        super().__init__(
            [
                (
                    entry["stream"],
                    [(now_ns - int(line["seconds_ago"] * NS), line["line"]) for line in entry["lines"]],
                )
                for entry in streams
            ],
            tenant=tenant,
        )
