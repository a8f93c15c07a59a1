"""Verifier stage: does the checked evidence support each claim? The verdict is computed by code.

The verifier (model or rules) classifies each claim against its gatekeeper-checked excerpts. Code
then (1) caps claims whose fact tokens are not in their verified evidence (grounding check),
(2) maps claim checks to fact classes, every executor claim being critical, and (3) computes the
verdict and groundedness score with the verdict matrix. The model's own verdict
and score are ignored; every difference is recorded in `overrides`. The verdict guards
(`diagnosis.pipeline.guards`, the gatekeeper's severity among them) cap the verdict afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.contracts import (
    Claim,
    ClaimCheck,
    ClaimVerification,
    ExecutorOutput,
    FactCheck,
    FactVerification,
    Verdict,
    VerifierOutput,
)
from diagnosis.pipeline.facts import NO_NAMES, FactNames, unsupported_facts
from diagnosis.pipeline.gatekeeper import RULE_SEVERITY, CheckedBinding, GatekeeperResult
from diagnosis.pipeline.injected_commands import instructions_in, root_cause_stated_as_verified
from tools.evidence.result import NO_EVIDENCE_PATH


class CheckedClaim(ClaimCheck):
    """A claim check after the code caps; `grounding_reason` says why a claim was capped."""

    grounding_reason: str = ""


class Override(BaseModel):
    """What code changed compared with the model's verifier output, and why."""

    model_config = ConfigDict(extra="forbid")

    subject: str  # "verdict", "groundedness_score" or a claim_id
    model: str | None
    code: str
    reason: str


class Verification(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    groundedness_score: float
    critical_fact_count: int
    claim_checks: list[CheckedClaim]
    facts_checked: list[FactCheck]
    rationale: str
    gaps: list[str]  # missing_evidence_facts: what a retry round should look for, shown as 当前缺口
    overrides: list[Override]


FACT_CLASS: dict[str, FactVerification] = {
    "direct_observation": "direct_evidence",
    "reasonable_inference": "indirect_support",
    "overstated": "no_evidence",
    "unsupported": "no_evidence",
    "external_unknown": "contradicted",
    "contradicted": "contradicted",
}
FACT_SCORE: dict[str, float] = {
    "direct_evidence": 1.0,
    "indirect_support": 0.6,
    "no_evidence": 0.0,
    "contradicted": 0.0,
}
# A grounding failure caps a claim at `unsupported`; worse classes stay as they are.
UNVERIFIED_MARK = "〔未核验〕"
# How strong a claim check is; code caps may only lower it.
VERIFICATION_STRENGTH = {
    "direct_observation": 3,
    "reasonable_inference": 2,
    "overstated": 1,
    "unsupported": 1,
    "external_unknown": 0,
    "contradicted": 0,
}
ROOT_CAUSE_GAP = "一条断言把根因表述为已证实：证据最多支持合理推断，根因未被证实"
INSTRUCTION_GAP = "一条断言包含命令或指令类文本，未作为结论采用（原文见证据面板）"
# "未检索到" is all a no-hit can support; these say more than that.
OVERSTATED_NEGATION = re.compile(
    r"已排除|排除了|确认没有|确定没有|肯定没有|不存在|没有发生|未发生|ruled out|confirmed no|does not exist",
    re.IGNORECASE,
)


def grounding_check(
    *, executor_output: ExecutorOutput, gatekeeper_result: GatekeeperResult, names: FactNames = NO_NAMES
) -> dict[str, str]:
    """Claims whose fact tokens (`names`: every name the sources know is one) are not all in their
    gatekeeper-passed evidence, with the reason."""
    reasons = {}
    for claim in executor_output.claims:
        passed = gatekeeper_result.passed_for(claim.claim_id)
        if not passed:
            reasons[claim.claim_id] = "没有通过引用核验的证据"
            continue
        # The recorded text, not the model's excerpt of it: a truncated excerpt may cut a number.
        evidence = [b.matched_text or "" for b in passed]
        missing = unsupported_facts(claim.claim_text, evidence, names=names)
        if missing:
            reasons[claim.claim_id] = f"断言中的 {'、'.join(missing)} 不在已核验的证据中"
    return reasons


def verdict_compute(fact_classes: Sequence[FactVerification]) -> tuple[Verdict, float]:
    """The verdict matrix and groundedness score over the critical facts' classes."""
    if not fact_classes:
        return "LOW_CONFID", 0.0
    if "contradicted" in fact_classes:
        return "REJECT", 0.0
    score = min(1.0, max(0.0, sum(FACT_SCORE[c] for c in fact_classes) / len(fact_classes)))
    supported = all(c in ("direct_evidence", "indirect_support") for c in fact_classes)
    verdict: Verdict = "PASS" if supported and "direct_evidence" in fact_classes else "LOW_CONFID"
    return verdict, round(score, 3)


def verification_finalize(
    *,
    verifier_output: VerifierOutput,
    executor_output: ExecutorOutput,
    gatekeeper_result: GatekeeperResult,
    guidance_tools: Collection[str],
    names: FactNames = NO_NAMES,
    slot_facts: Sequence[FactCheck] = (),
) -> Verification:
    """`slot_facts`: the asks' filled slots, facts code read from verified tool output."""
    overrides: list[Override] = []
    checks = _claim_checks_capped(
        verifier_output, executor_output, gatekeeper_result, overrides, guidance_tools, names
    )
    facts = facts_of(executor_output, checks)
    # A contradiction the model found beyond the claims can only make the verdict stricter.
    claim_texts = {claim.claim_text for claim in executor_output.claims}
    facts += [
        f
        for f in verifier_output.facts_checked
        if f.is_critical and f.verification == "contradicted" and f.fact not in claim_texts
    ]
    facts += slot_facts
    verdict, score = verdict_compute([f.verification for f in facts])
    _verdict_overrides(verifier_output, verdict, score, overrides)
    return Verification(
        verdict=verdict,
        groundedness_score=score,
        critical_fact_count=len(facts),
        claim_checks=checks,
        facts_checked=facts,
        rationale=verifier_output.rationale,
        gaps=list(
            dict.fromkeys(
                gap
                for claim, check in zip(executor_output.claims, checks, strict=True)
                if (gap := _gap(claim, check, gatekeeper_result, names))
            )
        ),
        overrides=overrides,
    )


def verifier_output_for_gatekeeper_reject(
    *, executor_output: ExecutorOutput, gatekeeper_result: GatekeeperResult
) -> VerifierOutput:
    """The verifier model is not consulted on fabricated citations: claims citing them are contradicted."""
    checks = []
    for claim in executor_output.claims:
        rejected = [
            b.rule
            for b in gatekeeper_result.checked_bindings
            if b.claim_id == claim.claim_id and b.rule and RULE_SEVERITY.get(b.rule) == "reject"
        ]
        verification, detail = (
            ("contradicted", f"引用核验判定为伪造或不匹配的证据（{'、'.join(dict.fromkeys(rejected))}）")
            if rejected
            else ("unsupported", "引用核验整体被拒绝，未调用校验模型")
        )
        checks.append(
            ClaimCheck(claim_id=claim.claim_id, verification=verification, detail=detail, evidence_refs=[])
        )
    rules = "、".join(gatekeeper_result.failed_rules)
    return VerifierOutput(
        claim_checks=checks,
        facts_checked=facts_of(executor_output, checks),
        rationale=f"引用核验失败（{rules}），属于伪造或不匹配的证据引用，未调用校验模型。",
    )


def _claim_checks_capped(
    verifier_output: VerifierOutput,
    executor_output: ExecutorOutput,
    gatekeeper_result: GatekeeperResult,
    overrides: list[Override],
    guidance_tools: Collection[str],
    names: FactNames,
) -> list[CheckedClaim]:
    """One check per executor claim: missing ones count as unsupported, ungrounded ones are capped."""
    by_claim = {check.claim_id: check for check in verifier_output.claim_checks}
    claim_ids = {claim.claim_id for claim in executor_output.claims}
    for claim_id in by_claim.keys() - claim_ids:
        overrides.append(
            Override(
                subject=claim_id,
                model=by_claim[claim_id].verification,
                code="ignored",
                reason="不是执行器提出的断言",
            )
        )
    grounding = grounding_check(
        executor_output=executor_output, gatekeeper_result=gatekeeper_result, names=names
    )
    checks = []
    for claim in executor_output.claims:
        model_check = by_claim.get(claim.claim_id)
        check = CheckedClaim(
            **(model_check.model_dump() if model_check else _missing_check(claim.claim_id)),
            grounding_reason=grounding.get(claim.claim_id, ""),
        )
        if model_check is None:
            overrides.append(
                Override(
                    subject=claim.claim_id,
                    model=None,
                    code="unsupported",
                    reason="校验器未给出该断言的核查结果",
                )
            )
        cap = evidence_cap(claim, gatekeeper_result.passed_for(claim.claim_id), guidance_tools)
        if check.grounding_reason:
            cap = ("unsupported", check.grounding_reason)
        if cap and VERIFICATION_STRENGTH[check.verification] > VERIFICATION_STRENGTH[cap[0]]:
            overrides.append(
                Override(subject=claim.claim_id, model=check.verification, code=cap[0], reason=cap[1])
            )
            check.verification = cap[0]
            check.detail = "；".join(part for part in (check.detail, cap[1]) if part)
        checks.append(check)
    return checks


def _missing_check(claim_id: str) -> dict:
    return {
        "claim_id": claim_id,
        "verification": "unsupported",
        "detail": "校验器未给出该断言的核查结果",
        "evidence_refs": [],
    }


def _verdict_overrides(
    verifier_output: VerifierOutput, verdict: Verdict, score: float, overrides: list[Override]
) -> None:
    reason = "按判决矩阵由断言核查结果计算"
    if verifier_output.verdict is not None and verifier_output.verdict != verdict:
        overrides.append(
            Override(subject="verdict", model=verifier_output.verdict, code=verdict, reason=reason)
        )
    model_score = verifier_output.groundedness_score
    if model_score is not None and abs(model_score - score) > 1e-6:
        overrides.append(
            Override(subject="groundedness_score", model=str(model_score), code=str(score), reason=reason)
        )


def _gap(claim: Claim, check: CheckedClaim, gatekeeper_result: GatekeeperResult, names: FactNames) -> str:
    """A Chinese sentence for a critical fact without direct evidence (retry context, 当前缺口).

    Gaps reach the user and the composer's material, so a claim is quoted with its unverified
    numbers and names masked: "97%" must not come back as if it were evidence; a claim holding a
    command or an instruction, or a root cause stated as verified, is not quoted at all."""
    fact_class = FACT_CLASS[check.verification]
    if fact_class not in ("indirect_support", "no_evidence"):
        return ""
    if instructions_in(claim.claim_text) or root_cause_stated_as_verified(claim.claim_text):
        return ROOT_CAUSE_GAP if root_cause_stated_as_verified(claim.claim_text) else INSTRUCTION_GAP
    if fact_class == "indirect_support":
        return f"“{claim.claim_text}”只有间接支持，缺少直接证据"
    if check.verification == "overstated":
        # Quote the no-hit, not the overstated claim: its wording ("已排除…") must not reach the user.
        searched = claim.evidence_bindings[0].evidence_excerpt if claim.evidence_bindings else "相关检索"
        return f"{searched}：只能说明当前未发现匹配证据，不能据此下排除结论"
    verified = [b.matched_text or "" for b in gatekeeper_result.passed_for(claim.claim_id)]
    masked = claim.claim_text
    for token in unsupported_facts(claim.claim_text, verified, names=names):
        masked = masked.replace(token, UNVERIFIED_MARK)
    detail = "：其中标为〔未核验〕的内容不在已核验的证据中" if masked != claim.claim_text else ""
    return f"“{masked}”缺少直接证据{detail}"


def facts_of(executor_output: ExecutorOutput, checks: Sequence[ClaimCheck]) -> list[FactCheck]:
    return [
        FactCheck(
            fact=claim.claim_text,
            is_critical=True,
            verification=FACT_CLASS[check.verification],
            detail=check.detail,
            evidence_refs=check.evidence_refs,
        )
        for claim, check in zip(executor_output.claims, checks, strict=True)
    ]


def evidence_cap(
    claim: Claim, passed: list[CheckedBinding], guidance_tools: Collection[str]
) -> tuple[ClaimVerification, str] | None:
    """The strongest class the kind of evidence allows, whichever engine judged the claim.

    `guidance_tools` are the tools whose records are guidance (runbooks, past cases), never facts.
    A root cause is never observed: at most a reasonable inference, and not even that when it is
    stated as verified (evidence text saying "root cause verified" is data, not a verification)."""
    if root_cause_stated_as_verified(_without_quotes(claim.claim_text, passed)):
        return "overstated", "根因被表述为已证实：证据只能支持推断，不能证实根因"
    if passed and all(b.raw_path == NO_EVIDENCE_PATH for b in passed):
        if claim.claim_type != "negative_observation":
            return "unsupported", "未检索到证据不能支持正向断言"
        if OVERSTATED_NEGATION.search(claim.claim_text):
            return "overstated", "未检索到证据只能支持“未检索到”，不能支持“已排除/确认没有”"
        return None
    if claim.claim_type == "root_cause" and passed:
        return "reasonable_inference", "根因断言最多是合理推断，不是直接观察"
    if passed and all(b.tool_name in guidance_tools for b in passed):
        return "reasonable_inference", "只有处理手册支持：手册是排查指引，不是当前事实"
    return None


def _without_quotes(text: str, passed: list[CheckedBinding]) -> str:
    """What the claim says in its own words: the evidence it quotes is data, not a statement of it."""
    for binding in passed:
        if binding.evidence_excerpt:
            text = text.replace(binding.evidence_excerpt, " ")
    return text
