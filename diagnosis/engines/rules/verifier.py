"""The rules engine's verifier: classifies each claim from its gatekeeper-checked bindings."""

from __future__ import annotations

from diagnosis.pipeline.contracts import (
    Claim,
    ClaimCheck,
    ClaimVerification,
    ExecutorOutput,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.gatekeeper import CheckedBinding, GatekeeperResult
from diagnosis.pipeline.verdict import FACT_CLASS, evidence_cap, facts_of, grounding_check
from tools.evidence.tool import guidance_tool_names


def verify_by_rules(stage_input: VerifierInput) -> VerifierOutput:
    """Classifies each claim from its gatekeeper-checked bindings."""
    executor_output = ExecutorOutput.model_validate(stage_input.executor_structured_output)
    gatekeeper_result = GatekeeperResult.model_validate(stage_input.gatekeeper_result)
    grounding = grounding_check(executor_output=executor_output, gatekeeper_result=gatekeeper_result)
    checks = [
        _claim_check(claim, gatekeeper_result, grounding.get(claim.claim_id, ""))
        for claim in executor_output.claims
    ]
    counts = {kind: sum(c.verification == kind for c in checks) for kind in FACT_CLASS}
    rationale = (
        f"规则校验 {len(checks)} 条断言：直接观察 {counts['direct_observation']} 条，"
        f"合理推断 {counts['reasonable_inference']} 条，"
        f"证据不足或表述过度 {counts['unsupported'] + counts['overstated']} 条。"
    )
    return VerifierOutput(
        claim_checks=checks, facts_checked=facts_of(executor_output, checks), rationale=rationale
    )


def _claim_check(claim: Claim, gatekeeper_result: GatekeeperResult, grounding_reason: str) -> ClaimCheck:
    passed = gatekeeper_result.passed_for(claim.claim_id)
    cited = [b for b in gatekeeper_result.checked_bindings if b.claim_id == claim.claim_id]
    verification, detail = _classify(claim, passed, cited, grounding_reason)
    return ClaimCheck(
        claim_id=claim.claim_id,
        verification=verification,
        detail=detail,
        evidence_refs=[b.source_label() for b in passed],
    )


def _classify(
    claim: Claim, passed: list[CheckedBinding], cited: list[CheckedBinding], grounding_reason: str
) -> tuple[ClaimVerification, str]:
    if grounding_reason:  # also when no binding passed
        return "unsupported", grounding_reason
    cap = evidence_cap(claim, passed, guidance_tool_names())
    if cap:
        return cap
    if claim.claim_type in ("root_cause", "risk"):
        return "reasonable_inference", "根因或风险是基于已核验证据的推断，不是直接观察"
    if len(passed) < len(cited):
        return "reasonable_inference", "部分引用未通过核验，仅由其余证据支持"
    return "direct_observation", "断言由已核验的证据直接支持"
