"""What of a tool message the model reads, and fitting a request into the model's context
(`DIAGNOSIS_LLM_CONTEXT_TOKENS`).

A tool message reaches the model summarised by code: its evidence refs verbatim (they are what a
claim cites, so never reworded; at most MODEL_REFS of them, the rest counted), its output as a short
summary (scalar fields bounded, each list of records as its count): the records themselves are the
refs' text, so sending them again only doubled every tool message.

Tokens are estimated, not counted (no tokenizer for every model): UTF-8 bytes / 3, which errs on
the safe side for Chinese (one CJK character is 3 bytes and at most about one token) and for JSON.
What is trimmed first is what was already a bounded convenience copy: the `output` of a tool
message and the `output_summary` of a trace entry. The `evidence_refs` a claim must cite are never
trimmed: without them nothing could be verified.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from diagnosis.pipeline.contracts import RankedCandidate

BYTES_PER_TOKEN = 3
# Chat-template tokens around each message, and a margin for the estimate.
MESSAGE_OVERHEAD_TOKENS = 8
SAFETY_MARGIN_TOKENS = 256
BOUNDED_FIELDS = ("output", "output_summary")
TRIMMED_NOTE = "〔为适应模型上下文已省略；可引用的证据原文见 evidence_refs〕"
MODEL_REFS = 12
SUMMARY_TEXT_CHARS = 160
RECORDS_NOTE = "{count} 条（原文见 evidence_refs）"
# A candidate's ref text as shown: its start is still a verbatim excerpt to cite.
CANDIDATE_REF_CHARS = 240


def tool_message_for_model(message: dict) -> dict:
    """`message` as the model reads it: refs verbatim and bounded in number, the output summarised."""
    shown = dict(message)
    refs = message.get("evidence_refs") or []
    if len(refs) > MODEL_REFS:
        shown["evidence_refs"] = refs[:MODEL_REFS]
        shown["evidence_refs_omitted"] = message.get("evidence_refs_omitted", 0) + len(refs) - MODEL_REFS
    if isinstance(message.get("output"), dict):
        shown["output"] = _summary(message["output"], depth=0)
    return shown


def candidate_for_model(
    candidate: RankedCandidate, *, shown: Collection[tuple[int | None, str | None]]
) -> dict:
    """A ranked candidate as the model reads it: its words and numbers, and the refs they come from
    (in the shape the model cites: tool, invocation, raw_path, and the text unless a tool message the
    model is `shown` already holds that ref)."""
    return {
        "subject": candidate.subject,
        "mechanism": candidate.mechanism,
        "onset": candidate.onset,
        "before": candidate.before,
        "after": candidate.after,
        "refs": [
            {"tool_name": b.tool_name, "invocation_id": b.source_invocation_id, "raw_path": b.raw_path}
            | (
                {}
                if (b.source_invocation_id, b.raw_path) in shown
                else {"text": _bounded_to(b.evidence_excerpt, CANDIDATE_REF_CHARS)}
            )
            for b in candidate.bindings
        ],
    }


def composer_material_for_model(material: dict) -> dict:
    """The composer's material as the model reads it: each finding's and inference's words, and only
    the excerpts its words do not already hold (a finding that quotes its excerpt sent it twice); where
    they come from is the guard's business, not the prose's."""
    return material | {
        key: [
            {
                "claim_text": item["claim_text"],
                "evidence": [
                    e["excerpt"]
                    for e in item["evidence"]
                    if e["excerpt"] and e["excerpt"] not in item["claim_text"]
                ],
            }
            for item in material[key]
        ]
        for key in ("confirmed_findings", "reasonable_inferences")
    }


def _bounded_to(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _summary(value: Any, *, depth: int) -> Any:
    if isinstance(value, list):
        return RECORDS_NOTE.format(count=len(value))
    if isinstance(value, dict):
        if depth >= 2:
            return _bounded(json.dumps(value, ensure_ascii=False))
        return {key: _summary(item, depth=depth + 1) for key, item in value.items()}
    return _bounded(value) if isinstance(value, str) else value


def _bounded(text: str) -> str:
    return text if len(text) <= SUMMARY_TEXT_CHARS else text[:SUMMARY_TEXT_CHARS] + "…"


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
