"""The fixed text the product writes whatever the evidence says: headings, disclaimers, the `结论` and
`未能回答` line prefixes. An `answer_contains` item inside it proves nothing about the answer, so the
eval's loader rejects such a case.

The texts are rendered by the product's own template code with a placeholder where evidence would go
and cut at it, so a changed template changes the rule without anyone copying its strings here.
"""

from __future__ import annotations

import re
from functools import cache

from diagnosis.pipeline.answer import AnswerRecord, Degraded, answer_markdown
from diagnosis.pipeline.ask import Ask, AskWindow
from diagnosis.pipeline.asks.action import READ_ONLY
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.asks.slots import slot_gap
from diagnosis.pipeline.asks.unread import UNREAD
from diagnosis.pipeline.composer import answer_from_material
from diagnosis.pipeline.contracts import ComposerInput
from diagnosis.pipeline.focus import NOTHING_UNDERSTOOD
from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS, OutputType
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.verdict import INSTRUCTION_GAP, ROOT_CAUSE_GAP, UNVERIFIED_MARK

# Stands where the evidence would be; never in a template.
PLACEHOLDER = "\u0000"
# Markdown and list markers around a template line (`**`, `- `, `1. `), not text of its own.
MARKUP = re.compile(r"^[\s>#*_\-]*(?:\d+[.)])?[\s*_]*|[\s*_]+$")
# A fragment with no letter, digit or CJK character (a lone `：` or `（`) fixes nothing.
MEANINGFUL = re.compile(r"\w")


@cache
def fixed_texts() -> tuple[str, ...]:
    """Every piece of fixed text an answer can hold, one line or one part of a line each."""
    fragments = (
        MARKUP.sub("", part.replace("**", ""))
        for text in _rendered()
        for line in text.splitlines()
        for part in line.split(PLACEHOLDER)
    )
    return tuple(dict.fromkeys(f for f in fragments if MEANINGFUL.search(f)))


def fixed_text_holding(item: str) -> str | None:
    """The fixed text `item` is part of (case-insensitively), None when it is in none."""
    folded = item.strip().casefold()
    return next((text for text in fixed_texts() if folded in text.casefold()), None)


def _rendered() -> list[str]:
    window = AskWindow(minutes=1, label=PLACEHOLDER)
    item = {"claim_text": PLACEHOLDER, "evidence": [{"excerpt": PLACEHOLDER, "source": PLACEHOLDER}]}
    return [
        *(
            answer_markdown(
                AnswerRecord(
                    output_type=output_type, prose=PLACEHOLDER, gaps=[PLACEHOLDER], degraded=Degraded()
                )
            )
            for output_type in OutputType
        ),
        answer_from_material(
            ComposerInput(
                query=PLACEHOLDER,
                confirmed_findings=[item],
                reasonable_inferences=[item],
                gaps=[PLACEHOLDER],
                allowed_actions=[PLACEHOLDER],
            )
        ),
        answer_from_material(
            ComposerInput(
                query=PLACEHOLDER,
                confirmed_findings=[],
                reasonable_inferences=[],
                gaps=[],
                allowed_actions=[],
            )
        ),
        Slot(
            ask=Ask(kind="value", window=window), filled=True, conclusion=PLACEHOLDER, limits=[PLACEHOLDER]
        ).line(),
        *(
            slot_gap(
                Slot(ask=Ask(kind=kind, subject=PLACEHOLDER, window=window), filled=False, why=PLACEHOLDER)
            )
            for kind in KINDS
        ),
        READ_ONLY.format(word=PLACEHOLDER),
        UNREAD.format(clause=PLACEHOLDER, words=PLACEHOLDER),
        NOTHING_UNDERSTOOD,
        ROOT_CAUSE_GAP,
        INSTRUCTION_GAP,
        UNVERIFIED_MARK,
        *OUTPUT_TYPE_LABELS.values(),
    ]
