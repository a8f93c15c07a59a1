"""Composer stage: writes the Chinese answer from verifier-allowed material only.

Code decides what the composer may see (`composer_material_build`, or read back from a stored
record: `composer_material_from_record`), checks what it wrote (`composer_guard`), can write the
answer itself (`answer_from_material`), and assembles the text the user sees for each output type
(`user_facing_text`, one fixed template per output type). The typed parts of what it may show
(`verified_quotes`, `degraded_of`) are shared with the AIOps report, so both show evidence and gaps
alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from diagnosis.pipeline.answer import (
    ACTIONS_HEADING,
    FINDINGS_HEADING,
    INFERENCES_HEADING,
    NO_CONCLUSION,
    AnswerRef,
    Conclusion,
    Degraded,
    FailedCitation,
    Quote,
    Statement,
    bullets,
    evidence_quote,
    one_line,
)
from diagnosis.pipeline.asks.slots import conclusion_lines
from diagnosis.pipeline.contracts import Claim, ComposerInput, ExecutorOutput
from diagnosis.pipeline.facts import NO_NAMES, FactNames, fact_tokens, unsupported_facts
from diagnosis.pipeline.fix_advice import fix_recommendations
from diagnosis.pipeline.gatekeeper import EMPTY_BINDINGS, CheckedBinding, GatekeeperResult
from diagnosis.pipeline.injected_commands import (
    QUOTE_ONLY,
    evidence_gathering,
    instructions_in,
    root_cause_stated_as_verified,
)
from diagnosis.pipeline.records import verifier_record_read
from diagnosis.pipeline.scope import text_mentions_excluded
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.verdict import FACT_CLASS, Verification
from tools.vocabulary import Vocabulary

# Excluded topics matched by name only, when no world vocabulary is given.
NO_VOCABULARY = Vocabulary()
# Counts only: gap lines never repeat an executor claim.
GAP_LABELS = {
    "contradicted": "条断言与证据矛盾或无法核实",
    "no_evidence": "条断言缺少直接证据",
    "indirect_support": "条断言只有间接支持",
}
# Raw JSON, code fences or internal field names in an answer mean tool output or our own data leaked.
LEAKAGE = re.compile(
    r'[{\[]\s*"[^"\n]*"\s*:|```|\b(?:evidence_refs|evidence_bindings|evidence_excerpt|source_invocation_id'
    r"|retrieval_details|claim_id|tool_calls)\b"
)


def composer_material_build(
    *,
    query: str,
    executor_output: ExecutorOutput,
    verification: Verification,
    gatekeeper_result: GatekeeperResult,
    vocabulary: Vocabulary = NO_VOCABULARY,
    names: FactNames = NO_NAMES,
    conclusions: Sequence[str] = (),
) -> ComposerInput:
    """Only what the verifier allowed: never a blocked, unsupported or contradicted claim, never the
    text of a command or instruction found in evidence, and as actions only evidence gathering.
    `conclusions`: the filled slots' `结论` lines, which the answer opens with."""
    statements, inferred = verified_statements(
        executor_output=executor_output,
        verification=verification,
        gatekeeper_result=gatekeeper_result,
        names=names,
    )
    findings, inferences = [material_item(s) for s in statements], [material_item(s) for s in inferred]
    allowed_texts = _strings([findings, inferences, verification.gaps, list(conclusions)])
    actions = [
        action
        for action in executor_output.recommended_actions
        if evidence_gathering(action, vocabulary=vocabulary)
        and not unsupported_facts(action, allowed_texts, names=names)
    ]
    return ComposerInput(
        query=query,
        confirmed_findings=findings,
        reasonable_inferences=inferences,
        gaps=list(verification.gaps),
        allowed_actions=actions,
        conclusions=list(conclusions),
    )


@dataclass(frozen=True)
class RecordedMaterial:
    """A final round read back from its `verifier_evaluation` record, with its composer material."""

    executor_output: ExecutorOutput
    verification: Verification
    gatekeeper_result: GatekeeperResult
    material: ComposerInput
    # The material's findings and inferences, typed.
    findings: list[Statement]
    inferences: list[Statement]


def composer_material_from_record(*, query: str, record: Any) -> RecordedMaterial | None:
    """The composer material of a stored `verifier_evaluation` record; None when it is missing or
    unreadable (`verifier_record_read`), so nothing from it counts as confirmed.

    The record's `executor_structured_output` is already past the scope guard: no re-filtering here.
    """
    stored = verifier_record_read(record)
    if stored is None:
        return None
    verification = Verification.model_validate(stored.model_dump(include=set(Verification.model_fields)))
    findings, inferences = verified_statements(
        executor_output=stored.executor_structured_output,
        verification=verification,
        gatekeeper_result=stored.gatekeeper_result,
    )
    return RecordedMaterial(
        findings=findings,
        inferences=inferences,
        executor_output=stored.executor_structured_output,
        verification=verification,
        gatekeeper_result=stored.gatekeeper_result,
        material=composer_material_build(
            query=query,
            executor_output=stored.executor_structured_output,
            verification=verification,
            gatekeeper_result=stored.gatekeeper_result,
            conclusions=conclusion_lines(stored.slots),
        ),
    )


def composer_guard(
    *,
    answer: str,
    material: ComposerInput,
    excluded_topics: Sequence[str] = (),
    vocabulary: Vocabulary = NO_VOCABULARY,
    names: FactNames = NO_NAMES,
) -> list[str]:
    """What in the answer is not backed by the material: fact tokens absent from it (`names`: every
    name the sources know is one), leaked JSON, topics the user excluded (by their synonyms in the
    world `vocabulary`, else by name), remedies, and — wherever they came from — commands, injected
    instructions and a root cause stated as verified."""
    material_texts = _strings(
        [
            material.conclusions,
            material.confirmed_findings,
            material.reasonable_inferences,
            material.gaps,
            material.allowed_actions,
        ]
    )
    offending = unsupported_facts(answer, material_texts, names=names)
    offending += [match.group(0) for match in LEAKAGE.finditer(answer)]
    offending += text_mentions_excluded(answer, list(excluded_topics), vocabulary=vocabulary)
    offending += fix_recommendations(
        answer=answer,
        facts=_strings(
            [material.conclusions, material.confirmed_findings, material.reasonable_inferences, material.gaps]
        ),
        vocabulary=vocabulary,
    )
    offending += [f"命令或指令：{text}" for text in instructions_in(answer)]
    if root_cause_stated_as_verified(answer):
        offending.append("根因被表述为已证实")
    return list(dict.fromkeys(offending))


def states_confirmed_finding(answer: str, material: ComposerInput, names: FactNames = NO_NAMES) -> bool:
    """Whether the answer states a fact token (name, number, code…) of a confirmed finding; true when
    the findings hold none to state. An answer that states none (measured: a 1.5B model returned
    its prompt's placeholder) answers nothing."""
    texts = [item["claim_text"] for item in material.confirmed_findings] + [
        evidence["excerpt"] for item in material.confirmed_findings for evidence in item["evidence"]
    ]
    finding_tokens = {
        form for text in texts for token in fact_tokens(text, names) for form in token.supporting_forms(names)
    }
    return not finding_tokens or any(token.value in finding_tokens for token in fact_tokens(answer, names))


def answer_from_material(material: ComposerInput) -> str:
    """A Chinese Markdown answer written by code from the material alone, the conclusions first."""
    sections = [material.conclusions] if material.conclusions else []
    if material.confirmed_findings:
        sections.append([FINDINGS_HEADING, *finding_lines(material.confirmed_findings)])
    if material.reasonable_inferences:
        sections.append([INFERENCES_HEADING, *finding_lines(material.reasonable_inferences)])
    if not sections:
        sections.append([NO_CONCLUSION])
    if material.allowed_actions:
        sections.append([ACTIONS_HEADING, *bullets(material.allowed_actions)])
    return "\n\n".join("\n".join(lines) for lines in sections)


def verified_statements(
    *,
    executor_output: ExecutorOutput,
    verification: Verification,
    gatekeeper_result: GatekeeperResult,
    names: FactNames = NO_NAMES,
) -> tuple[list[Statement], list[Statement]]:
    """The claims the verifier allowed, as (findings, inferences), each with its passed quotes."""
    verification_of = {check.claim_id: check.verification for check in verification.claim_checks}
    findings, inferences = [], []
    for claim in executor_output.claims:
        if verification_of.get(claim.claim_id) == "direct_observation":
            findings.append(statement_of(claim, gatekeeper_result, names))
        elif verification_of.get(claim.claim_id) == "reasonable_inference":
            inferences.append(statement_of(claim, gatekeeper_result, names))
    return findings, inferences


def statement_of(claim: Claim, gatekeeper_result: GatekeeperResult, names: FactNames = NO_NAMES) -> Statement:
    """A claim as the composer may use it. Evidence holding a command or an instruction is named by its
    ref only, and a claim whose own text holds one by its subjects only: such a record is quoted in
    the evidence panel, never in an answer."""
    text = claim.claim_text
    if instructions_in(text):
        subjects = dict.fromkeys(t.surface for t in fact_tokens(text, names) if t.kind == "name")
        text = "、".join(subjects) + (" 的" if subjects else "") + QUOTE_ONLY
    return Statement(
        claim_id=claim.claim_id,
        text=text,
        quotes=[
            Quote(excerpt="" if _holds_instructions(b) else b.evidence_excerpt, ref=AnswerRef.of_binding(b))
            for b in gatekeeper_result.passed_for(claim.claim_id)
        ],
    )


def material_item(statement: Statement) -> dict[str, Any]:
    """A statement as the composer's material has it (JSON for a model: refs as their raw text)."""
    return {
        "claim_id": statement.claim_id,
        "claim_text": statement.text,
        "evidence": [{"excerpt": q.excerpt, "source": q.ref.text()} for q in statement.quotes],
    }


def answer_conclusions(slots: Sequence[Slot]) -> list[Conclusion]:
    """The filled slots' `结论` lines with the refs each rests on."""
    return [
        Conclusion(
            statement=slot.conclusion,
            source=slot.source,
            limits=slot.limits,
            refs=[AnswerRef.of_binding(b) for b in slot.bindings],
        )
        for slot in slots
        if slot.filled
    ]


def degraded_of(*, verification: Verification, gatekeeper_result: GatekeeperResult) -> Degraded:
    """What a DEGRADED answer may show: the verified quotes (each ref once), the failed citations, the
    claims without a citation and the counts per fact class: never claim text."""
    failed = [
        FailedCitation(ref=AnswerRef.of_binding(binding), rule=binding.rule)
        for binding in gatekeeper_result.checked_bindings
        if binding.status == "fail"
    ]
    counts = []
    unbound = sum(message.rule == EMPTY_BINDINGS for message in gatekeeper_result.warnings)
    if unbound:
        counts.append(f"{unbound} 条断言没有任何证据引用")
    classes = [FACT_CLASS[check.verification] for check in verification.claim_checks]
    counts += [f"{classes.count(kind)} {label}" for kind, label in GAP_LABELS.items() if kind in classes]
    return Degraded(verified=verified_quotes(gatekeeper_result), failed=failed, counts=counts)


def verified_quotes(gatekeeper_result: GatekeeperResult) -> list[Quote]:
    """The tool records whose citation the gatekeeper verified, each ref once: never claim text."""
    verified: dict[AnswerRef, Quote] = {}
    for binding in gatekeeper_result.checked_bindings:
        if binding.status == "pass" and binding.matched_text:
            ref = AnswerRef.of_binding(binding)
            excerpt = "" if _holds_instructions(binding) else binding.matched_text
            verified.setdefault(ref, Quote(excerpt=excerpt, ref=ref))
    return list(verified.values())


def _holds_instructions(binding: CheckedBinding) -> bool:
    return bool(instructions_in(binding.evidence_excerpt) or instructions_in(binding.matched_text or ""))


def finding_lines(items: list[dict]) -> list[str]:
    """Material items (findings or inferences) as Markdown bullets, each with its quoted evidence
    (each excerpt once: a claim that is its excerpt is not quoted again; evidence kept out of answers
    is named by its source)."""
    lines = []
    for item in items:
        text = one_line(item["claim_text"])
        # A claim that only restates its quote (a no-hit, a log line) is printed once, with its sources.
        if item["evidence"] and all(one_line(e["excerpt"]) in ("", text) for e in item["evidence"]):
            lines.append(f"- {text}（来源：{'、'.join(e['source'] for e in item['evidence'])}）")
            continue
        lines.append(f"- {text}")
        lines += [
            f"  - 证据：{evidence_quote(excerpt=e['excerpt'], source=e['source'])}"
            if e["excerpt"]
            else f"  - 证据：{QUOTE_ONLY}（来源：{e['source']}）"
            for e in item["evidence"]
        ]
    return lines


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []
