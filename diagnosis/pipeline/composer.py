"""Composer stage: writes the Chinese answer from verifier-allowed material only.

Code decides what the composer may see (`composer_material_build`, or read back from a stored
record: `composer_material_from_record`), checks what it wrote (`composer_guard`), can write the
answer itself (`answer_from_material`), and assembles the text the user sees for each output type
(`user_facing_text`, one fixed template per output type). The Markdown parts (`finding_lines`,
`evidence_quote`, `verified_evidence_lines`, `evidence_gap_lines`, `bullets`) are shared with the
AIOps report, so both show evidence and gaps alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

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
from diagnosis.pipeline.routing import OutputType
from diagnosis.pipeline.scope import text_mentions_excluded
from diagnosis.pipeline.verdict import FACT_CLASS, Verification
from tools.vocabulary import Vocabulary

DISCLAIMER = "以下结论基于当前已获取证据，仍存在部分证据缺口，请谨慎参考。"
DEGRADED_HEADER = "当前无法基于已获取证据生成可靠结论，建议人工介入。"
NO_CONCLUSION = "当前未获得可直接确认的结论。"
INFERENCES_HEADING = "**合理推断**（基于已核验证据，尚未直接证实）"
ACTIONS_HEADING = "**建议的取证动作**"
# Excluded topics matched by name only, when no world vocabulary is given.
NO_VOCABULARY = Vocabulary()
# Counts only: gap lines never repeat an executor claim.
GAP_LABELS = {
    "contradicted": "条断言与证据矛盾或无法核实",
    "no_evidence": "条断言缺少直接证据",
    "indirect_support": "条断言只有间接支持",
}
DEGRADED_NEXT_STEPS = (
    "人工复核本次会话的工具调用记录与证据引用（见诊断轨迹）。",
    "针对上述证据缺口补充检索后，重新发起诊断。",
)
# Raw JSON, code fences or internal field names in an answer mean tool output or our own data leaked.
LEAKAGE = re.compile(
    r'[{\[]\s*"[^"\n]*"\s*:|```|\b(?:evidence_refs|evidence_bindings|evidence_excerpt|source_invocation_id'
    r"|retrieval_details|claim_id|tool_calls)\b"
)
EXCERPT_CHARS = 300
CONCLUSION_WORD = "结论"


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
    verification_of = {check.claim_id: check.verification for check in verification.claim_checks}
    findings, inferences = [], []
    for claim in executor_output.claims:
        if verification_of.get(claim.claim_id) == "direct_observation":
            findings.append(_material_item(claim, gatekeeper_result, names))
        elif verification_of.get(claim.claim_id) == "reasonable_inference":
            inferences.append(_material_item(claim, gatekeeper_result, names))
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


def composer_material_from_record(*, query: str, record: Any) -> RecordedMaterial | None:
    """The composer material of a stored `verifier_evaluation` record; None when it is missing or
    unreadable (`verifier_record_read`), so nothing from it counts as confirmed.

    The record's `executor_structured_output` is already past the scope guard: no re-filtering here.
    """
    stored = verifier_record_read(record)
    if stored is None:
        return None
    verification = Verification.model_validate(stored.model_dump(include=set(Verification.model_fields)))
    return RecordedMaterial(
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
        sections.append(["**已确认的发现**", *finding_lines(material.confirmed_findings)])
    if material.reasonable_inferences:
        sections.append([INFERENCES_HEADING, *finding_lines(material.reasonable_inferences)])
    if not sections:
        sections.append([NO_CONCLUSION])
    if material.allowed_actions:
        sections.append([ACTIONS_HEADING, *bullets(material.allowed_actions)])
    return "\n\n".join("\n".join(lines) for lines in sections)


def conclusions_first(answer: str, conclusions: Sequence[str]) -> str:
    """An answer that does not open with its conclusion lines gets them put first."""
    first = next((line.strip().lstrip("-*# ").strip("*") for line in answer.splitlines() if line.strip()), "")
    if not conclusions or first.startswith(CONCLUSION_WORD):
        return answer
    return "\n".join(conclusions) + "\n\n" + answer


def user_facing_text(
    *, output_type: str, composer_answer: str, verification: Verification, gatekeeper_result: GatekeeperResult
) -> str:
    """The text the user sees, assembled by code from one fixed template per output type."""
    if output_type == OutputType.NORMAL:
        return composer_answer
    if output_type == OutputType.LOW_CONFID_WITH_DISCLAIMER:
        text = f"{DISCLAIMER}\n\n{composer_answer}"
        if verification.gaps:
            text += "\n\n当前缺口：\n" + "\n".join(bullets(verification.gaps))
        return text
    return _degraded_text(verification, gatekeeper_result)


def _material_item(claim: Claim, gatekeeper_result: GatekeeperResult, names: FactNames) -> dict[str, Any]:
    """A claim as the composer may use it. Evidence holding a command or an instruction is named by its
    source only, and a claim whose own text holds one by its subjects only: such a record is quoted in
    the evidence panel, never in an answer."""
    passed = gatekeeper_result.passed_for(claim.claim_id)
    text = claim.claim_text
    if instructions_in(text):
        subjects = dict.fromkeys(t.surface for t in fact_tokens(text, names) if t.kind == "name")
        text = "、".join(subjects) + (" 的" if subjects else "") + QUOTE_ONLY
    return {
        "claim_id": claim.claim_id,
        "claim_text": text,
        "evidence": [
            {"excerpt": "" if _holds_instructions(b) else b.evidence_excerpt, "source": b.source_label()}
            for b in passed
        ],
    }


def _holds_instructions(binding: CheckedBinding) -> bool:
    return bool(instructions_in(binding.evidence_excerpt) or instructions_in(binding.matched_text or ""))


def finding_lines(items: list[dict]) -> list[str]:
    """Material items (findings or inferences) as Markdown bullets, each with its quoted evidence
    (each excerpt once: a claim that is its excerpt is not quoted again; evidence kept out of answers
    is named by its source)."""
    lines = []
    for item in items:
        text = _one_line(item["claim_text"])
        # A claim that only restates its quote (a no-hit, a log line) is printed once, with its sources.
        if item["evidence"] and all(_one_line(e["excerpt"]) in ("", text) for e in item["evidence"]):
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


def evidence_quote(*, excerpt: str, source: str) -> str:
    """Evidence as users see it: one quoted line (a runbook block spans several) and its source."""
    return f"「{_shortened(excerpt)}」（来源：{source}）"


def verified_evidence_lines(gatekeeper_result: GatekeeperResult) -> list[str]:
    """The tool records whose citation the gatekeeper verified, each quoted once: never claim text."""
    verified: dict[str, str] = {}
    for binding in gatekeeper_result.checked_bindings:
        if binding.status == "pass" and binding.matched_text:
            text = QUOTE_ONLY if _holds_instructions(binding) else binding.matched_text
            verified.setdefault(binding.source_label(), text)
    return [evidence_quote(excerpt=text, source=source) for source, text in verified.items()]


def evidence_gap_lines(*, verification: Verification, gatekeeper_result: GatekeeperResult) -> list[str]:
    """What kept claims from being confirmed: failed citations, unbound claims, counts per fact class."""
    gaps = [
        f"{binding.source_label()} 的引用未通过核验（{binding.rule}）"
        for binding in gatekeeper_result.checked_bindings
        if binding.status == "fail"
    ]
    unbound = sum(message.rule == EMPTY_BINDINGS for message in gatekeeper_result.warnings)
    if unbound:
        gaps.append(f"{unbound} 条断言没有任何证据引用")
    classes = [FACT_CLASS[check.verification] for check in verification.claim_checks]
    gaps += [f"{classes.count(kind)} {label}" for kind, label in GAP_LABELS.items() if kind in classes]
    return gaps


def bullets(lines: Iterable[str]) -> list[str]:
    return [f"- {line}" for line in lines]


def _degraded_text(verification: Verification, gatekeeper_result: GatekeeperResult) -> str:
    """Only gatekeeper-verified evidence with its source, the gaps and next steps: never claim text."""
    gaps = evidence_gap_lines(verification=verification, gatekeeper_result=gatekeeper_result)
    return "\n\n".join(
        [
            DEGRADED_HEADER,
            "已确认信息：\n"
            + "\n".join(bullets(verified_evidence_lines(gatekeeper_result) or ["暂无通过核验的证据"])),
            "证据缺口：\n" + "\n".join(bullets(gaps or ["暂无可以确认的结论"])),
            "建议下一步：\n" + "\n".join(bullets(DEGRADED_NEXT_STEPS)),
        ]
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shortened(text: str) -> str:
    """One line; long evidence is cut at a separator, never inside a number."""
    text = _one_line(text)
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = max(text.rfind(sep, 0, EXCERPT_CHARS) for sep in ("，", "。", "；", "; ", ", ", " "))
    return text[: cut if cut > 0 else EXCERPT_CHARS] + "…"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []
