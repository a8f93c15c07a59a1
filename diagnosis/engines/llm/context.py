"""Fitting a request into the model's context (`DIAGNOSIS_LLM_CONTEXT_TOKENS`).

Tokens are estimated, not counted (no tokenizer for every model): UTF-8 bytes / 3, which errs on
the safe side for Chinese (one CJK character is 3 bytes and at most about one token) and for JSON.
What is trimmed first is what was already a bounded convenience copy: the `output` of a tool
message and the `output_summary` of a trace entry. The `evidence_refs` a claim must cite are never
trimmed: without them nothing could be verified.
"""

from __future__ import annotations

import json
from typing import Any

BYTES_PER_TOKEN = 3
# Chat-template tokens around each message, and a margin for the estimate.
MESSAGE_OVERHEAD_TOKENS = 8
SAFETY_MARGIN_TOKENS = 256
BOUNDED_FIELDS = ("output", "output_summary")
TRIMMED_NOTE = "〔为适应模型上下文已省略；可引用的证据原文见 evidence_refs〕"


def estimated_tokens(messages: list[dict], tools: list[dict] | None = None) -> int:
    size = sum(len((message.get("content") or "").encode()) for message in messages)
    size += sum(len(json.dumps(message["tool_calls"])) for message in messages if message.get("tool_calls"))
    if tools:
        size += len(json.dumps(tools, ensure_ascii=False).encode())
    return size // BYTES_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS * len(messages)


def prompt_budget(context_tokens: int, max_completion_tokens: int) -> int:
    """Tokens the prompt may use: the context minus the reply's cap and a margin."""
    return max(0, context_tokens - max_completion_tokens - SAFETY_MARGIN_TOKENS)


def without_bounded_outputs(value: Any) -> Any:
    """`value` with every bounded output field replaced by a note (refs and everything else kept)."""
    if isinstance(value, list):
        return [without_bounded_outputs(item) for item in value]
    if not isinstance(value, dict):
        return value
    return {
        key: TRIMMED_NOTE
        if key in BOUNDED_FIELDS and item not in (None, "", {}, [])
        else without_bounded_outputs(item)
        for key, item in value.items()
    }
