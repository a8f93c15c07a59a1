"""The bounded text a trace entry says about its hits (`diagnosis.services.tool_call_summary`): each
kind's record says its own facts (`EvidenceRecord.summary`) with these helpers, concrete facts first."""

from __future__ import annotations

# How much of one sample (an alert's description, a log message, a ref text) an entry quotes.
SAMPLE_CHARS = 160


def bounded(prefix: str, lines: list[str], budget: int, unit: str) -> str:
    """Prefix plus as many whole lines as fit the budget, then how many were left out."""
    text = prefix
    for index, line in enumerate(lines):
        separator = "; " if index else ""
        rest = len(lines) - index - 1
        reserve = len(f"; …另有 {rest} {unit}未列出") if rest else 0
        if len(text) + len(separator) + len(line) + reserve > budget:
            return clip(f"{text}{separator}…另有 {len(lines) - index} {unit}未列出", budget)
        text += separator + line
    return clip(text, budget)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
