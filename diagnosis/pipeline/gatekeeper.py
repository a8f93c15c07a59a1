"""Gatekeeper stage (code, no LLM): is every cited excerpt really in that tool call's output?

It judges citations, not claims. Per binding: the invocation belongs to this session,
the tool name is the invocation's, the raw_path is one of its evidence refs, and the excerpt
matches that ref's text: exactly, as a substring, or fuzzily (whitespace, punctuation, full-/half-
width and truncation tolerated) — but never with a changed fact token (number, unit, service,
alert name, endpoint, error code), see `diagnosis.pipeline.facts`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel, LCSseq

from diagnosis.pipeline.contracts import (
    Claim,
    EvidenceBinding,
    ExecutorOutput,
)
from diagnosis.pipeline.facts import ELLIPSIS, NO_NAMES, FactNames, normalize, unsupported_facts
from tools.evidence.registry import current_name
from tools.evidence.result import NO_EVIDENCE_PATH, ToolResult

Severity = Literal["none", "low_confid", "reject"]


class CheckedBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str
    tool_name: str
    source_invocation_id: int | None
    raw_path: str | None
    status: Literal["pass", "fail"]
    rule: str | None = None
    matched_text: str | None = None
    similarity: float | None = None
    evidence_excerpt: str = ""

    def source_label(self) -> str:
        """Where the evidence comes from, as shown to reviewers and users: `query_logs #12 $.logs[0]`."""
        return " ".join(
            part for part in (f"{self.tool_name} #{self.source_invocation_id}", self.raw_path) if part
        )


class RuleMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str
    message: str
    claim_id: str | None = None


class GatekeeperResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["pass", "fail"]
    severity: Severity
    checked_bindings: list[CheckedBinding]
    failed_rules: list[str]
    warnings: list[RuleMessage]
    errors: list[RuleMessage]

    def passed_for(self, claim_id: str) -> list[CheckedBinding]:
        """The bindings of one claim whose citation the gatekeeper verified."""
        return [b for b in self.checked_bindings if b.claim_id == claim_id and b.status == "pass"]


# --- Rules. Each rule has one severity; reject dominates low_confid. ---

INVOCATION_REF = "evidence.invocation_ref"
TOOL_NAME = "evidence.tool_name"
RAW_PATH = "evidence.raw_path"
EXCERPT_MISMATCH = "evidence.excerpt_mismatch"
EMPTY_BINDINGS = "evidence.empty_bindings"
MISSING_RAW_PATH = "evidence.missing_raw_path"
NO_REFS = "evidence.no_refs"
EXCERPT_TOO_SHORT = "evidence.excerpt_too_short"
AUTO_BACKFILL = "evidence.invocation_auto_backfill"
# Not in the seeds: no source_invocation_id and no unique candidate to backfill it from.
MISSING_INVOCATION_ID = "evidence.missing_invocation_id"
# The claim denies what its evidence states (a firing alert, a matched line, a series), or states what
# its evidence denies (a search that found nothing).
POLARITY_MISMATCH = "evidence.polarity_mismatch"
# The claim calls a cited log line an error, timeout or slow request the line is not.
LABEL_UNSUPPORTED = "evidence.label_unsupported"

RULE_SEVERITY: dict[str, Severity] = {
    INVOCATION_REF: "reject",
    TOOL_NAME: "reject",
    RAW_PATH: "reject",
    EXCERPT_MISMATCH: "reject",
    EMPTY_BINDINGS: "low_confid",
    MISSING_RAW_PATH: "low_confid",
    NO_REFS: "low_confid",
    EXCERPT_TOO_SHORT: "low_confid",
    AUTO_BACKFILL: "low_confid",
    MISSING_INVOCATION_ID: "low_confid",
    POLARITY_MISMATCH: "reject",
    LABEL_UNSUPPORTED: "reject",
}

# Excerpt matching, calibrated by the tolerance table in tests/diagnosis/test_gatekeeper.py: honest
# excerpts (reformatted, full-width, truncated, an omitted word or a typo) keep ≥ 0.96 of their
# characters in order within the ref; padded or reworded ones keep ≤ 0.94, made-up text < 0.6.
MATCH_THRESHOLD = 0.95
MIN_MEANINGFUL_CHARS = 6
GENERIC_WORDS = re.compile(
    "未检索到匹配证据|告警|日志|错误|异常|服务|证据|超时|失败|当前|"
    "firing|resolved|error|warning|warn|info|fatal|alerts?|logs?|service|exception|timeout"
)
# Polarity: an excerpt may not add or drop a negation ("未超过" for "持续超过", "is available" for
# "is not available", "发现" cut out of "未发现"). Checked on the characters the match leaves out
# or adds, and on what the ref says just before where the excerpt starts.
NEGATION = re.compile(r"[未不没无非否]|(?<![a-z_])(?:not|no|never|without|cannot)(?![a-z_])|n't")
ENGLISH_NEGATION = re.compile(r"(?<![a-z_])(?:not|no|never|without|cannot)(?![a-z_])|n't")
NEGATION_BEFORE = re.compile(r"(?:[未不没无非否]|没有|(?<![a-z])(?:not|no|never|without|cannot)|n't)\W*$")
# A claim that says something is absent: "未发现 … 告警", "不存在", "没有 X 告警", "no errors", "is not firing".
CLAIM_DENIES = re.compile(
    r"不存在|未发现|没发现|没有发现|未出现|没有出现|未触发|没有触发|未检索到|未找到|没找到|未见|并无|并未|未处于|排除|"
    r"(?:没有|无)(?:任何)?(?:告警|报警|记录|日志|数据|错误|异常|报错|问题|firing)|"
    # 没有 and what is absent a few words later in the same clause: "没有 DiskAlmostFull 告警".
    r"没有[^，。；、,.;!?！？\n]{1,40}?(?:告警|报警|记录|日志|错误|异常|报错)|"
    r"(?<![a-z_])(?:no|not|none|never|nothing|absent|without|ruled out)(?![a-z_])|n't",
    re.IGNORECASE,
)
# Evidence that itself denies or closes something: a negation, or an alert that is no longer firing.
EVIDENCE_DENIES = re.compile(
    rf"{NEGATION.pattern}|(?<![a-z_])(?:resolved|inactive|absent|none)(?![a-z_])|已恢复|已解决", re.IGNORECASE
)
# A claim quoting its evidence carries the evidence's own words: a negation inside a quoted line (an
# nginx line's "No such file or directory") is the line's, not the claim's polarity. A stretch this long
# copied from a ref the claim cites is a quote.
QUOTED_MIN_CHARS = 8


@dataclass(frozen=True)
class ExcerptMatch:
    kind: Literal["exact", "substring", "fuzzy", "too_short", "mismatch"]
    similarity: float
    detail: str = ""

    @property
    def matched(self) -> bool:
        return self.kind in ("exact", "substring", "fuzzy")


def gatekeep(
    *,
    executor_output: ExecutorOutput,
    invocations: Sequence[ToolResult],
    names: FactNames = NO_NAMES,
) -> GatekeeperResult:
    """Check every evidence binding of every claim against THIS session's recorded invocations.

    `names`: what the session's sources know, so a swapped name is a changed fact whatever its shape."""
    return claims_checked(executor_output.claims, invocations=invocations, names=names)


def claims_checked(
    claims: Sequence[Claim], *, invocations: Sequence[ToolResult], names: FactNames = NO_NAMES
) -> GatekeeperResult:
    """The same check over any claims: the executor's, or the slots' code-written conclusions."""
    checked: list[CheckedBinding] = []
    findings: list[RuleMessage] = []
    for claim in claims:
        if not claim.evidence_bindings:
            findings.append(
                RuleMessage(rule=EMPTY_BINDINGS, message="断言没有任何证据引用", claim_id=claim.claim_id)
            )
        said = own_words(claim.claim_text, _cited_texts(claim, invocations))
        for binding in claim.evidence_bindings:
            row, notes = _binding_check(claim, binding, invocations, names, said)
            checked.append(row)
            findings.extend(notes)
    return _result(checked, findings)


def excerpt_match(excerpt: str, ref_text: str, names: FactNames = NO_NAMES) -> ExcerptMatch:
    """How `excerpt` matches one evidence ref text. Fact tokens first: a changed fact never matches."""
    similarity = _similarity(excerpt, ref_text)
    changed = unsupported_facts(excerpt, [ref_text], truncation_tolerant=True, names=names)
    if changed:
        return ExcerptMatch("mismatch", similarity, f"摘录中的 {'、'.join(changed)} 不在证据原文中")
    if _meaningful_length(excerpt) < MIN_MEANINGFUL_CHARS:
        return ExcerptMatch("too_short", similarity, "摘录过短或过于泛化，无法稳定比对")
    if similarity < MATCH_THRESHOLD:
        return ExcerptMatch(
            "mismatch", similarity, f"摘录与证据原文相似度 {similarity:.2f} 低于 {MATCH_THRESHOLD}"
        )
    if similarity < 1.0 and _adds_negation(excerpt, ref_text):
        return ExcerptMatch("mismatch", similarity, "摘录加入了证据原文没有的否定词")
    if dropped := _polarity_change(excerpt, ref_text):
        return ExcerptMatch("mismatch", similarity, f"摘录与证据原文的否定不一致（{dropped}）")
    return ExcerptMatch(_match_kind(excerpt, ref_text, similarity), similarity)


def own_words(claim_text: str, cited: Sequence[str]) -> str:
    """The claim without what it quotes verbatim from the texts it cites: what it says itself, whose
    polarity is checked against each citation (so a verdict never depends on which line is quoted)."""
    text = claim_text
    for ref_text in cited:
        blocks = SequenceMatcher(None, text, ref_text, autojunk=False).get_matching_blocks()
        for block in blocks:
            if block.size >= QUOTED_MIN_CHARS:
                text = text[: block.a] + " " * block.size + text[block.a + block.size :]
    return text


def claim_denial(claim_text: str, *, ref_text: str, raw_path: str | None) -> str:
    """Why a claim's polarity contradicts the evidence it cites ("" when it does not): it denies what a
    record states that denies nothing, or states what a search that found nothing denies. Quoted
    negations count on both sides, so a claim quoting "Connection is not available" is consistent."""
    denies = bool(CLAIM_DENIES.search(normalize(claim_text)))
    if raw_path == NO_EVIDENCE_PATH:
        return "" if denies else "断言陈述了证据（未检索到匹配记录）所否定的内容"
    if denies and not EVIDENCE_DENIES.search(normalize(ref_text)):
        return "断言否定了证据所陈述的内容"
    return ""


def _cited_texts(claim: Claim, invocations: Sequence[ToolResult]) -> list[str]:
    """The recorded texts of the refs the claim cites (a no-hit's sentence is no quote: it is what a
    negative claim restates)."""
    by_id = {invocation.invocation_id: invocation for invocation in invocations}
    return [
        ref.text
        for binding in claim.evidence_bindings
        if binding.raw_path != NO_EVIDENCE_PATH and (invocation := by_id.get(binding.source_invocation_id))
        for ref in invocation.refs
        if ref.path == binding.raw_path
    ]


def _binding_check(
    claim: Claim,
    binding: EvidenceBinding,
    invocations: Sequence[ToolResult],
    names: FactNames,
    said: str,
) -> tuple[CheckedBinding, list[RuleMessage]]:
    claim_id = claim.claim_id
    row = CheckedBinding(
        claim_id=claim_id,
        tool_name=binding.tool_name,
        source_invocation_id=binding.source_invocation_id,
        raw_path=binding.raw_path,
        status="fail",
        evidence_excerpt=binding.evidence_excerpt,
    )
    notes = []
    for rule, message in _binding_failures(row, claim, binding, invocations, names, said):
        row.rule = row.rule or rule
        notes.append(RuleMessage(rule=rule, message=f"{row.source_label()}：{message}", claim_id=claim_id))
    if not notes:
        row.status = "pass"
    return row, notes


def _same_tool(recorded: str, cited: str) -> bool:
    """A citation by a tool's former name (a scripted or recorded answer) cites the tool as it is now."""
    return current_name(recorded) == current_name(cited)


def _binding_failures(
    row: CheckedBinding,
    claim: Claim,
    binding: EvidenceBinding,
    invocations: Sequence[ToolResult],
    names: FactNames,
    said: str,
) -> Iterator[tuple[str, str]]:
    """The rules one binding breaks, in order; what was found is filled in on `row` on the way.
    `said`: the claim in its own words (`own_words`), whose polarity is checked."""
    if row.source_invocation_id is None:
        candidates = [i for i in invocations if _same_tool(i.tool_name, binding.tool_name)]
        if len(candidates) != 1:
            yield MISSING_INVOCATION_ID, f"缺少 source_invocation_id，且 {binding.tool_name} 没有唯一候选调用"
            return
        row.source_invocation_id = candidates[0].invocation_id
        yield AUTO_BACKFILL, "source_invocation_id 由唯一候选调用自动回填，raw_path 不回填"

    invocation = next((i for i in invocations if i.invocation_id == row.source_invocation_id), None)
    if invocation is None:
        yield INVOCATION_REF, "该调用不存在于本会话的工具调用记录中"
        return
    if not _same_tool(invocation.tool_name, binding.tool_name):
        yield TOOL_NAME, f"引用声称的工具与实际调用的工具 {invocation.tool_name} 不一致"
        return
    refs = invocation.refs
    if not refs:
        yield NO_REFS, "该调用没有可引用的 evidence_refs"
        return

    if not binding.raw_path:
        # Never filled in; but the excerpt must still be found in one of the invocation's refs.
        match, ref = max(
            ((excerpt_match(binding.evidence_excerpt, r.text, names), r) for r in refs),
            key=lambda pair: (pair[0].matched, pair[0].similarity),
        )
        row.similarity = round(match.similarity, 3)
        if match.kind == "mismatch":
            yield EXCERPT_MISMATCH, "缺少 raw_path，且摘录与该调用的任何证据都不匹配"
            return
        row.matched_text = ref.text
        yield MISSING_RAW_PATH, "缺少 raw_path，引用无法精确定位"
        return

    ref = next((r for r in refs if r.path == binding.raw_path), None)
    if ref is None:
        yield RAW_PATH, "raw_path 不在该调用的 evidence_refs 中"
        return
    match = excerpt_match(binding.evidence_excerpt, ref.text, names)
    row.matched_text, row.similarity = ref.text, round(match.similarity, 3)
    if match.kind == "mismatch":
        yield EXCERPT_MISMATCH, match.detail
    elif match.kind == "too_short":
        yield EXCERPT_TOO_SHORT, match.detail
    elif denial := claim_denial(
        claim.claim_text if binding.raw_path == NO_EVIDENCE_PATH else said,
        ref_text=row.matched_text,
        raw_path=binding.raw_path,
    ):
        yield POLARITY_MISMATCH, denial


# A checked binding by what names it: (claim_id, source_invocation_id, raw_path).
BindingKey = tuple[str, Any, str | None]


def with_binding_failures(
    result: GatekeeperResult, failures: Sequence[tuple[BindingKey, RuleMessage]]
) -> GatekeeperResult:
    """The result with more failed bindings (a binding guard's): each names the binding it fails
    (claim, invocation, raw_path) and why; the severity is recomputed as for the gatekeeper's own rules."""
    if not failures:
        return result
    checked = [row.model_copy() for row in result.checked_bindings]
    for key, note in failures:
        for row in checked:
            if (row.claim_id, row.source_invocation_id, row.raw_path) == key:
                row.status, row.rule = "fail", row.rule or note.rule
    rebuilt = _result(checked, [*result.warnings, *result.errors, *(note for _, note in failures)])
    # The gatekeeper's rules in the order they failed, then the guards'.
    failed_rules = list(dict.fromkeys([*result.failed_rules, *rebuilt.failed_rules]))
    return rebuilt.model_copy(update={"failed_rules": failed_rules})


def _result(checked: list[CheckedBinding], findings: list[RuleMessage]) -> GatekeeperResult:
    severities = {RULE_SEVERITY[f.rule] for f in findings}
    severity: Severity = "reject" if "reject" in severities else ("low_confid" if severities else "none")
    return GatekeeperResult(
        status="pass" if severity == "none" else "fail",
        severity=severity,
        checked_bindings=checked,
        failed_rules=list(dict.fromkeys(f.rule for f in findings)),
        warnings=[f for f in findings if RULE_SEVERITY[f.rule] == "low_confid"],
        errors=[f for f in findings if RULE_SEVERITY[f.rule] == "reject"],
    )


def _skeleton(text: str) -> str:
    """Letters, digits and CJK only: whitespace, punctuation, case and width no longer matter."""
    return "".join(ch for ch in normalize(text).casefold() if ch.isalnum())


def _pieces(excerpt: str) -> list[str]:
    """An excerpt shortened with "..." is several pieces of the ref, in order."""
    return [p for p in (_skeleton(part) for part in ELLIPSIS.split(normalize(excerpt))) if p]


def _similarity(excerpt: str, ref_text: str) -> float:
    """Share of the excerpt's characters found in order in the ref (the weakest piece counts)."""
    ref = _skeleton(ref_text)
    pieces = _pieces(excerpt)
    if not pieces or not ref:
        return 0.0
    return min(_piece_coverage(piece, ref) for piece in pieces)


def _piece_coverage(piece: str, ref: str) -> float:
    if piece in ref:
        return 1.0
    window = ref
    if len(piece) < len(ref):
        # Around the best-aligned stretch of the ref, with room for the excerpt's omissions.
        alignment = fuzz.partial_ratio_alignment(piece, ref)
        slack = len(piece) // 2 + 1
        window = ref[max(0, alignment.dest_start - slack) : alignment.dest_end + slack]
    return LCSseq.similarity(piece, window) / len(piece)


def _match_kind(excerpt: str, ref_text: str, similarity: float) -> Literal["exact", "substring", "fuzzy"]:
    if similarity < 1.0:
        return "fuzzy"
    pieces, ref = _pieces(excerpt), _skeleton(ref_text)
    if "".join(pieces) == ref:
        return "exact"
    position = 0
    for piece in pieces:
        position = ref.find(piece, position)
        if position < 0:
            return "fuzzy"
        position += len(piece)
    return "substring"


def _meaningful_length(excerpt: str) -> int:
    return len(GENERIC_WORDS.sub("", _skeleton(excerpt)))


def _adds_negation(excerpt: str, ref_text: str) -> bool:
    ref = normalize(ref_text).casefold()
    return any(word not in ref for word in NEGATION.findall(normalize(excerpt).casefold()))


def _polarity_change(excerpt: str, ref_text: str) -> str:
    """The negation the excerpt drops or adds against the ref ("" when polarity is kept). Fails closed:
    a negation anywhere in what the alignment leaves out or adds counts."""
    ref_normal = normalize(ref_text).casefold()
    ref, positions = _skeleton_map(ref_normal)
    for piece in _pieces(excerpt):
        start = ref.find(piece)
        if start >= 0:
            if start and NEGATION_BEFORE.search(ref_normal[: positions[start]]):
                return "摘录从否定词之后开始截取"
            continue
        alignment = fuzz.partial_ratio_alignment(piece, ref)
        slack = len(piece) // 2 + 1
        low, high = max(0, alignment.dest_start - slack), alignment.dest_end + slack
        window = ref[low:high]
        # English negations are words: compare them word by word over the aligned stretch of the ref.
        aligned = ref_normal[positions[alignment.dest_start] : positions[max(alignment.dest_end - 1, 0)] + 1]
        if sorted(ENGLISH_NEGATION.findall(aligned)) != sorted(
            ENGLISH_NEGATION.findall(_piece_text(excerpt, piece))
        ):
            return "摘录改动了英文否定词"
        for tag, i1, i2, j1, j2 in Indel.opcodes(piece, window).as_list():
            if tag == "equal":
                continue
            changed = piece[i1:i2] + " " + window[j1:j2]
            if (i2 > i1 and NEGATION.search(piece[i1:i2])) or (j2 > j1 and _negation_in(window, j1, j2)):
                return f"摘录改动了否定词：{changed.strip()}"
    return ""


def _negation_in(text: str, start: int, end: int) -> bool:
    """A negation among the skeleton characters text[start:end] (English words need their whole span)."""
    return bool(
        NEGATION.search(text[start:end])
        and (re.search(r"[未不没无非否]", text[start:end]) or end - start >= 2)
    )


def _skeleton_map(text: str) -> tuple[str, list[int]]:
    """The skeleton of an already normalized, casefolded text, and each skeleton character's index in it."""
    kept = [(ch, index) for index, ch in enumerate(text) if ch.isalnum()]
    return "".join(ch for ch, _ in kept), [index for _, index in kept]


def _piece_text(excerpt: str, piece: str) -> str:
    """The normalized words of the excerpt part a skeleton piece came from."""
    for part in ELLIPSIS.split(normalize(excerpt).casefold()):
        if _skeleton(part) == piece:
            return part
    return normalize(excerpt).casefold()
