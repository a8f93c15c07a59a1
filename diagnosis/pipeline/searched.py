"""What was searched and came back empty (an answer names what it searched; issue: the llm
path's gaps). A call that found nothing or failed, and that neither a kept claim nor a filled slot
cites, is one gap line naming the call and its source, whichever engine made it: an executor that
stated nothing still tells the user where it looked. Pure code over the round's tool messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from diagnosis.pipeline.contracts import NO_EVIDENCE_PATH, ExecutorOutput
from diagnosis.pipeline.slot import Slot


def searched_gaps(*, messages: Sequence[dict], output: ExecutorOutput, slots: Iterable[Slot]) -> list[str]:
    cited = {
        str(binding.source_invocation_id)
        for claim in output.claims
        for binding in claim.evidence_bindings
        if binding.source_invocation_id is not None
    } | {str(binding.source_invocation_id) for slot in slots if slot.filled for binding in slot.bindings}
    lines = [
        line
        for message in messages
        if str(message.get("invocation_id")) not in cited and (line := _searched_line(message))
    ]
    return list(dict.fromkeys(lines))


def _searched_line(message: dict) -> str:
    if not message.get("success", True):
        source = f"，来源 {message['source']}" if message.get("source") else ""
        return f"{message['tool_name']}（{_arguments(message)}{source}）调用失败，未获得证据"
    if message.get("evidence_status") == "no_evidence":
        # The no-hit ref's text already names the call and its source (`在 query_logs（…，来源 …）中…`).
        return next(
            (ref["text"] for ref in message.get("evidence_refs", []) if ref["raw_path"] == NO_EVIDENCE_PATH),
            "",
        )
    return ""


def _arguments(message: dict) -> str:
    return "，".join(f"{key}={value}" for key, value in (message.get("arguments") or {}).items()) or "无参数"
