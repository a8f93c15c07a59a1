"""The label check, pure code: a claim that calls log lines error, timeout or slow-request
lines needs that property in each line it cites, read by `tools.loglines.has_property`, the rule the
rules engine writes its labels by. A cited line without it fails with `evidence.label_unsupported`.

What a claim calls its lines is read from its own words only: the quoted lines and the excerpts are
taken out first (a line that says "timeout" does not make the claim call it a timeout), then a topic
label or term followed by a word for log lines (`超时日志`, `错误的日志记录`, `timeout lines`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from diagnosis.pipeline.contracts import NO_EVIDENCE_PATH, Claim, RecordedInvocation
from diagnosis.pipeline.gatekeeper import CLAIM_DENIES
from tools.loglines import PROPERTY_TOPICS, evidence_parts, has_property
from tools.vocabulary import Vocabulary

QUOTED = re.compile(r"「[^」]*」|“[^”]*”|\"[^\"]*\"")
SLOW_TOPICS = ("slow", "slow_query")
LOG_WORDS_CJK = "(?:的)?(?:日志|记录|报错行)"
LOG_WORDS_EN = r"s?\s+(?:log|logs|log lines?|lines?|entries|entry|messages?)(?![a-z])"


@dataclass(frozen=True)
class LabelFailure:
    claim_id: str
    source_invocation_id: object
    raw_path: str
    message: str


def _claim_words(vocabulary: Vocabulary) -> list[tuple[str, re.Pattern[str]]]:
    """(topic, pattern of the claim words that call a line a `topic` line) for each property topic:
    its label and its terms; of the slow topics only the terms that say slow (`数据库` is no claim)."""
    found = []
    for topic in PROPERTY_TOPICS:
        terms = vocabulary.groups.get(topic, [])
        if topic in SLOW_TOPICS:
            terms = [t for t in terms if "慢" in t or "slow" in t.lower()]
        words = [vocabulary.label(topic), *terms]
        cjk = sorted({w for w in words if w and not w.isascii()}, key=len, reverse=True)
        english = sorted({w.lower() for w in words if w.isascii() and w.replace(" ", "").isalpha()}, key=len)
        alternatives = [f"(?:{'|'.join(map(re.escape, cjk))}){LOG_WORDS_CJK}"] if cjk else []
        if english:
            alternatives.append(rf"(?<![a-z])(?:{'|'.join(map(re.escape, english))}){LOG_WORDS_EN}")
        if alternatives:
            found.append((topic, re.compile("|".join(alternatives), re.IGNORECASE)))
    return found


def claimed_topics(claim_text: str, excerpts: Sequence[str], *, vocabulary: Vocabulary) -> list[str]:
    """The property topics the claim calls its lines, its quotes and cited excerpts left out."""
    text = QUOTED.sub(" ", claim_text)
    for excerpt in excerpts:
        for part in (excerpt, evidence_parts(excerpt)[2]):
            if part.strip():
                text = text.replace(part, " ")
    return [topic for topic, pattern in _claim_words(vocabulary) if pattern.search(text)]


def labels_unsupported(
    claims: Sequence[Claim], *, invocations: Sequence[RecordedInvocation], vocabulary: Vocabulary
) -> list[LabelFailure]:
    """Each cited log line a claim calls what the line is not. A claim that denies (`没有错误日志`)
    calls no line anything."""
    refs = {
        (invocation.pk, ref.get("raw_path")): ref.get("text", "")
        for invocation in invocations
        if invocation.tool_name == "query_logs"
        for ref in (invocation.retrieval_details or {}).get("evidence_refs") or []
    }
    failures = []
    for claim in claims:
        bindings = [
            b
            for b in claim.evidence_bindings
            if b.tool_name == "query_logs" and b.raw_path != NO_EVIDENCE_PATH
        ]
        if not bindings or CLAIM_DENIES.search(QUOTED.sub(" ", claim.claim_text)):
            continue
        excerpts = [b.evidence_excerpt for b in claim.evidence_bindings]
        topics = claimed_topics(claim.claim_text, excerpts, vocabulary=vocabulary)
        for binding in bindings:
            text = refs.get((binding.source_invocation_id, binding.raw_path))
            if text is None:  # not a recorded line: the gatekeeper's own rules say so
                continue
            level, _, message = evidence_parts(text)
            missing = [
                t for t in topics if not has_property(t, level=level, message=message, vocabulary=vocabulary)
            ]
            if missing:
                labels = "、".join(vocabulary.label(t) for t in missing)
                failures.append(
                    LabelFailure(
                        claim_id=claim.claim_id,
                        source_invocation_id=binding.source_invocation_id,
                        raw_path=binding.raw_path or "",
                        message=f"断言称其为{labels}日志，但该行（级别 {level or '未知'}）没有该属性",
                    )
                )
    return failures
