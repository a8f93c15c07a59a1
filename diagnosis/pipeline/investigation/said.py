"""How an investigation says its numbers and times: a value in its signal's unit (cores, bytes, bytes
per second, per second, seconds) to three significant digits, a time of day in the tools' local time.

One function each, used where the text is written and where the gatekeeper writes the same number
again from the cited range result (`diagnosis.pipeline.derived`): the two can only agree.
"""

from __future__ import annotations

from datetime import datetime

from tools.numbers import number_text

SIGNIFICANT = 3
BINARY_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def value_said(value: float, unit: str) -> str:
    """`0.5 核`, `512 MiB`, `1.2 KiB/s`, `3.4/s`, `250 ms`, `1.5 s`, `12%` (a share); a unit it does not know after the number."""
    if unit == "cores":
        return f"{_sig(value)} 核"
    if unit in ("bytes", "bytes_per_second"):
        per = "/s" if unit == "bytes_per_second" else ""
        for name, size in BINARY_UNITS:
            if abs(value) >= size:
                return f"{_sig(value / size)} {name}{per}"
        return f"{_sig(value)} B{per}"
    if unit == "per_second":
        return f"{_sig(value)}/s"
    if unit == "share":
        return f"{_sig(value * 100)}%"
    if unit == "seconds":
        return f"{_sig(value * 1000)} ms" if abs(value) < 1 else f"{_sig(value)} s"
    return f"{_sig(value)} {unit}".strip()


def time_said(at: datetime) -> str:
    """The time of day (`HH:MM`) in the local time the tools write their outputs in."""
    return datetime.fromtimestamp(at.timestamp()).strftime("%H:%M")


def _sig(value: float) -> str:
    if value == 0:
        return "0"
    return number_text(f"{value:.{SIGNIFICANT}g}")
