"""What came back from the model, made safe to parse and to store.

- Reasoning text (`<think>…</think>` in the content, or a separate `reasoning_content` field) is
  removed before anything parses the reply, and is never stored or shown; only its length is kept.
- `finish_reason: "length"` marks the reply truncated: it is never parsed as complete.
- Stored replies are bounded: a step's replies together stay under `MODEL_OUTPUT_BYTES`, each cut
  with a note saying how long it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletion

THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
# Some chat templates put the opening tag in the prompt, so only the closing one reaches the client.
THINK_TAIL = re.compile(r"\A.*?</think>", re.DOTALL | re.IGNORECASE)
MODEL_OUTPUT_BYTES = 64 * 1024
# A stage reply this long is not a stage output (the largest are a few KB): refused unparsed.
REPLY_CHARS_LIMIT = MODEL_OUTPUT_BYTES


@dataclass
class NativeToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class ModelReply:
    content: str
    finish_reason: str
    tool_calls: list[NativeToolCall] = field(default_factory=list)
    refusal: str | None = None
    reasoning_chars: int = 0

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    @classmethod
    def of(cls, response: ChatCompletion) -> ModelReply | None:
        if not response.choices:
            return None
        choice = response.choices[0]
        message = choice.message
        content, reasoning_chars = without_reasoning(message.content or "")
        reasoning = (message.model_extra or {}).get("reasoning_content") or ""
        return cls(
            content=content,
            finish_reason=choice.finish_reason or "",
            tool_calls=[
                NativeToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
                for call in message.tool_calls or []
                if getattr(call, "function", None) is not None
            ],
            refusal=message.refusal,
            reasoning_chars=reasoning_chars + len(reasoning),
        )

    def stored(self) -> dict[str, Any]:
        record: dict[str, Any] = {"content": self.content, "finish_reason": self.finish_reason}
        if self.truncated:
            record["truncated"] = True
        if self.reasoning_chars:
            record["reasoning_chars"] = self.reasoning_chars
        return record


def without_reasoning(text: str) -> tuple[str, int]:
    """The text without its reasoning, and how many characters of reasoning were removed."""
    stripped = THINK_BLOCK.sub("", text)
    if "</think>" in stripped.lower():
        stripped = THINK_TAIL.sub("", stripped)
    stripped = stripped.strip()
    return stripped, max(0, len(text.strip()) - len(stripped))


def bounded_text(text: str, limit_bytes: int) -> str:
    """`text` within `limit_bytes` of UTF-8, cut with a note of its full length when it is longer."""
    encoded = text.encode()
    if len(encoded) <= limit_bytes:
        return text
    note = f"…〔已截断：原文 {len(encoded)} 字节〕"
    kept = encoded[: max(0, limit_bytes - len(note.encode()))].decode(errors="ignore")
    return kept + note


def bounded_replies(replies: list[dict[str, Any]], limit_bytes: int = MODEL_OUTPUT_BYTES) -> list[dict]:
    """The stored replies of one step within `limit_bytes` in all (each gets an equal share)."""
    if not replies:
        return []
    share = max(256, limit_bytes // len(replies) - 128)
    return [reply | {"content": bounded_text(reply["content"], share)} for reply in replies]
