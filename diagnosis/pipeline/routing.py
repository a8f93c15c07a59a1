"""Where a round's verdict leads: an output type, or one more round."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class OutputType(StrEnum):
    NORMAL = "NORMAL"
    LOW_CONFID_WITH_DISCLAIMER = "LOW_CONFID_WITH_DISCLAIMER"
    DEGRADED = "DEGRADED"


# How each output type is named wherever it is shown (chat, admin, reports): named for what the answer
# is worth, never for the system's state ("正常" read as "all is well").
OUTPUT_TYPE_LABELS = {
    OutputType.NORMAL: "已核验",
    OutputType.LOW_CONFID_WITH_DISCLAIMER: "有证据缺口",
    OutputType.DEGRADED: "已降级，需人工",
}

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
