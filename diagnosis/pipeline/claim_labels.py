"""The label check, pure code: a claim that calls log lines error, timeout or slow-request
lines needs that property in each line it cites, read by `tools.loglines.has_property`, the rule the
rules engine writes its labels by. A cited line without it fails with `evidence.label_unsupported`.
A cited count (`count_logs`) has a property when every line it counts has it: a count of slow lines
(threshold at least the vocabulary's) is of slow lines, a count of error lines by class of error lines.

What a claim calls its lines is read from its own words only: the quoted lines and the excerpts are
taken out first (a line that says "timeout" does not make the claim call it a timeout), then a topic
label or term followed by a word for log lines (`超时日志`, `错误的日志记录`, `timeout lines`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from diagnosis.pipeline.contracts import Claim
from diagnosis.pipeline.gatekeeper import CLAIM_DENIES, own_words
from tools.evidence.logs.record import LogCount, LogLine
from tools.evidence.registry import LOG_COUNTS, LOGS
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult
from tools.loglines import PROPERTY_TOPICS, has_property
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
    """The property topics the claim calls its lines, its quotes and cited excerpts (the whole ref
    text, or the line's message alone) left out."""
    text = QUOTED.sub(" ", claim_text)
    for excerpt in excerpts:
        if excerpt.strip():
            text = text.replace(excerpt, " ")
    return [topic for topic, pattern in _claim_words(vocabulary) if pattern.search(text)]


def labels_unsupported(
    claims: Sequence[Claim], *, results: Sequence[ToolResult], vocabulary: Vocabulary
) -> list[LabelFailure]:
    """Each cited log line a claim calls what the line is not. A claim that denies (`没有错误日志`)
    calls no line anything."""
    lines: dict[tuple[object, str], LogLine | LogCount] = {
        (result.invocation_id, ref.path): line
        for result in results
        if result.invocation_id is not None
        and (LOGS.owns(result.tool_name) or LOG_COUNTS.owns(result.tool_name))
        for line, ref in result.cited()
    }
    failures = []
    for claim in claims:
        bindings = [
            b
            for b in claim.evidence_bindings
            if (LOGS.owns(b.tool_name) or LOG_COUNTS.owns(b.tool_name)) and b.raw_path != NO_EVIDENCE_PATH
        ]
        cited = {
            (b.source_invocation_id, b.raw_path or ""): line
            for b in bindings
            if (line := lines.get((b.source_invocation_id, b.raw_path or ""))) is not None
        }
        excerpts = [b.evidence_excerpt for b in claim.evidence_bindings]
        # A negation inside a quoted line is the line's ("No such file or directory"), not a denial.
        said = own_words(QUOTED.sub(" ", claim.claim_text), [*excerpts, *(_text(line) for line in cited.values())])
        if not bindings or CLAIM_DENIES.search(said):
            continue
        topics = claimed_topics(
            claim.claim_text, [*excerpts, *(_text(line) for line in cited.values())], vocabulary=vocabulary
        )
        for binding in bindings:
            line = cited.get((binding.source_invocation_id, binding.raw_path or ""))
            if line is None:  # not a recorded line: the gatekeeper's own rules say so
                continue
            level = line.level if isinstance(line, LogLine) else ""
            missing = [t for t in topics if not _holds(t, line, vocabulary)]
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


def _text(record: LogLine | LogCount) -> str:
    return record.message if isinstance(record, LogLine) else record.line


def _holds(topic: str, record: LogLine | LogCount, vocabulary: Vocabulary) -> bool:
    """Whether the cited line, or every line the cited count counted, has the topic's property."""
    if isinstance(record, LogLine):
        return has_property(topic, level=record.level, message=record.message, vocabulary=vocabulary)
    if topic == "error":
        return record.measure == "class"
    if topic in SLOW_TOPICS:
        slow = (
            record.measure == "slow" and Decimal(record.slower_than_ms or 0) >= vocabulary.slow_threshold_ms
        )
        return slow and has_property(topic, level="", message=record.line, vocabulary=vocabulary)
    return False
