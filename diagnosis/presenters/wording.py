"""How the engineer's pages name what the records store in developer tokens (issue 25 item 5):
verdicts and alert states as words (output types as `routing.OUTPUT_TYPE_LABELS`, the badges' table),
evidence references as "Alertmanager 告警 #3".
The stored text keeps its tokens (reviewers read them in the admin); only the page says them so."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from diagnosis.pipeline.contracts import NO_EVIDENCE_PATH, RECORD_PATH
from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS
from tools.evidence.registry import kind_named
from tools.source_names import source_name

VERDICT_WORDS = {"PASS": "核验通过", "LOW_CONFID": "证据不足", "REJECT": "未通过"}
STATE_WORDS = {"firing": "触发中", "resolved": "已恢复", "pending": "待触发", "inactive": "未触发"}
# Quoted excerpts are the sources' own text: never reworded.
QUOTED = re.compile(r"(「[^」]*」)")
# An output type reads as its badge does (the one table: `routing.OUTPUT_TYPE_LABELS`).
WORDS = VERDICT_WORDS | {str(code): label for code, label in OUTPUT_TYPE_LABELS.items()} | STATE_WORDS
# A word between Chinese characters loses the spaces around it (分析 2 条 firing 告警 → 条触发中告警).
WORD = re.compile(
    r"(?:(?<=[\u3400-\u9fff]) )?(?<![A-Za-z0-9_])("
    + "|".join(sorted(WORDS, key=len, reverse=True))
    + r")(?![A-Za-z0-9_])(?: (?=[\u3400-\u9fff]))?"
)


def token_words(text: str) -> str:
    """Developer tokens in text code or a model wrote (states, verdicts, output types) as the engineer's
    words; tool and source names are written in words where the text is written, references are
    rendered from their typed refs."""
    return WORD.sub(lambda match: WORDS[match[1]], text)


def words_outside_quotes(escaped: str, words: Callable[[str], str] = token_words) -> str:
    """`words` applied to the text outside quoted excerpts (「…」)."""
    parts = QUOTED.split(escaped)
    return "".join(part if index % 2 else words(part) for index, part in enumerate(parts))


def reference_label(*, tool_name: str, invocation_id: int | None, raw_path: str, source: str) -> str:
    """`Alertmanager 告警 #3`: where the evidence is, said for the engineer (the raw path goes in a
    tooltip); a query's sample series is 指标, a no-hit says so."""
    evidence_kind = kind_named(tool_name)
    kind = (
        evidence_kind.reference_noun(raw_path, no_evidence_path=NO_EVIDENCE_PATH)
        if evidence_kind is not None
        else tool_name
    )
    number = f" #{invocation_id}" if invocation_id is not None else ""
    # `$.logs[3]`: the fourth record of the call, which tells apart several cited from one call.
    if item := RECORD_PATH.match(raw_path):
        number += f" 第 {int(item['index']) + 1} 条"
    no_hit = "（无匹配记录）" if raw_path == NO_EVIDENCE_PATH else ""
    return " ".join(part for part in (source_name(source), f"{kind}{number}{no_hit}") if part)


def evidence_anchor(*, invocation_id: int | None, raw_path: str) -> str:
    """The id of an evidence card on the chat page, which the answer's evidence line links to."""
    return f"evidence-{invocation_id}-" + re.sub(r"[^A-Za-z0-9]+", "-", raw_path).strip("-")


@dataclass(frozen=True)
class AnswerReferences:
    """What the page knows about the references in an answer: each invocation's source, and the
    (invocation, raw path) pairs shown as evidence cards on the same page."""

    sources: dict[int, str] = field(default_factory=dict)
    cards: frozenset[tuple[int, str]] = frozenset()
