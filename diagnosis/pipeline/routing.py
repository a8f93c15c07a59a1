"""Where a round's verdict leads (contracts §6): an output type, or one more round."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class OutputType(StrEnum):
    NORMAL = "NORMAL"
    LOW_CONFID_WITH_DISCLAIMER = "LOW_CONFID_WITH_DISCLAIMER"
    DEGRADED = "DEGRADED"


Route = Literal["NORMAL", "LOW_CONFID_WITH_DISCLAIMER", "DEGRADED", "RETRY"]
RETRY: Route = "RETRY"


def route(*, verdict: str, score: float, round: int, max_rounds: int, threshold: float) -> Route:
    """PASS → NORMAL; REJECT → DEGRADED, never retried; LOW_CONFID → disclaimer, or one more
    round while the score is below the threshold and rounds are left."""
    if verdict == "PASS":
        return OutputType.NORMAL.value
    if verdict == "REJECT":
        return OutputType.DEGRADED.value
    if score < threshold and round < max_rounds:
        return RETRY
    return OutputType.LOW_CONFID_WITH_DISCLAIMER.value
