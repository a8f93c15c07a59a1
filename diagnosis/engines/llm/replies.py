"""What came back from the model, made safe to parse and to store.

- Reasoning text (`<think>…</think>` in the content, or a separate `reasoning_content` field) is
  removed before anything parses the reply, and is never stored or shown; only its length is kept.
- `finish_reason: "length"` marks the reply truncated: it is never parsed as complete.
- Stored replies are bounded: a step's replies together stay under `MODEL_OUTPUT_BYTES`, each cut
  with a note saying how long it was.
- A reply that copies its instructions instead of answering (measured: a 1.5B verifier wrote a
  category's definition from its prompt as the reason for every claim) is found by `restated`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletion

THINK_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
# Some chat templates put the opening tag in the prompt, so only the closing one reaches the client.
THINK_TAIL = re.compile(r"\A.*?</think>", re.DOTALL | re.IGNORECASE)
MODEL_OUTPUT_BYTES = 64 * 1024
# A stage reply this long is not a stage output (the largest are a few KB): refused unparsed.
REPLY_CHARS_LIMIT = MODEL_OUTPUT_BYTES
# Letters and digits in a row that a reply may share with its instructions by chance: ten CJK
# characters are a phrase, not a common word.
RESTATED_CHARS = 10
QUOTED_CHARS = 4
NOT_A_WORD_CHARACTER = re.compile(r"[\W_]+")


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


def restated(text: str, instructions: str, *, own: Iterable[str] = ()) -> str:
    """A stretch of `text` copied from `instructions` (RESTATED_CHARS letters and digits, punctuation
    and spaces aside) that holds nothing quoted from `own` (what the reply may quote: its input);
    "" when there is none."""
    source = _letters(instructions)
    allowed = [_letters(quoted) for quoted in own]
    copied = _letters(text)
    # Whatever the reply quotes from its input (QUOTED_CHARS in a row or more) is its own.
    quoted = [False] * len(copied)
    for start in range(len(copied) - QUOTED_CHARS + 1):
        if any(copied[start : start + QUOTED_CHARS] in text for text in allowed):
            quoted[start : start + QUOTED_CHARS] = [True] * QUOTED_CHARS
    for start in range(len(copied) - RESTATED_CHARS + 1):
        window = copied[start : start + RESTATED_CHARS]
        if window in source and not any(quoted[start : start + RESTATED_CHARS]):
            return window
    return ""


def _letters(text: str) -> str:
    return NOT_A_WORD_CHARACTER.sub("", unicodedata.normalize("NFKC", text)).casefold()
