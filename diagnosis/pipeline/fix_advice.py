"""Fix recommendations in a composed answer: the composer may only suggest the
allowed evidence-gathering actions, never a remedy (restart, scale, delete, change config…).

A pure function over text: a clause that names a remedy is a recommendation unless it only restates
a fact of the material (e.g. a finding that a process restarted) without recommending anything.
Allowed actions never name a remedy (`instructions.evidence_gathering`), so none can license one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from diagnosis.pipeline.injected_commands import remedies_in
from tools.vocabulary import Vocabulary

ADVICE_CUES = ("建议", "应该", "应当", "需要", "请", "尝试", "可以", "立即", "马上", "考虑", "should", "try")
CLAUSE_BREAK = re.compile(r"[。；;！!？?\n]")


def fix_recommendations(*, answer: str, facts: Iterable[str], vocabulary: Vocabulary) -> list[str]:
    """The remedies (the vocabulary's `remedies`) the answer recommends (`facts`: the material's
    findings, inferences and gaps, which an answer may restate without recommending them)."""
    stated = " ".join(facts).lower()
    offending: list[str] = []
    for clause in CLAUSE_BREAK.split(answer):
        lowered = clause.lower()
        advising = any(cue in lowered for cue in ADVICE_CUES)
        for term in remedies_in(clause, vocabulary=vocabulary):
            if term in stated and not advising:
                continue
            offending.append(f"处置建议：{clause.strip()[:60]}")
            break
    return list(dict.fromkeys(offending))
