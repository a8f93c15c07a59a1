"""What a verifier is shown of each claim: the claim, the excerpts the gatekeeper verified for it, and
what code already found about them, so a small model judges one short item at a time instead of
reading the whole trace.

Code's findings are the ones the verdict is capped with afterwards (the grounding check's fact tokens,
the gatekeeper's polarity check): given to the verifier as input, they can only help it agree with
code; whatever it says, the caps still apply.
"""

from __future__ import annotations

from diagnosis.pipeline.contracts import ClaimUnderCheck, ExecutorOutput, VerifiedExcerpt
from diagnosis.pipeline.facts import NO_NAMES, FactNames, fact_tokens, unsupported_facts
from diagnosis.pipeline.gatekeeper import GatekeeperResult, claim_denial, own_words
from tools.evidence.result import NO_EVIDENCE_PATH

CONSISTENT = "consistent"
# The verdicts that say the excerpts bear a claim out; the others say they do not.
SUPPORTING = frozenset({"direct_observation", "reasonable_inference"})
# An excerpt is the recorded text of one evidence ref; as long as the tool message shows it.
EXCERPT_CHARS = 1000


def claims_under_check(
    *, executor_output: ExecutorOutput, gatekeeper_result: GatekeeperResult, names: FactNames = NO_NAMES
) -> list[ClaimUnderCheck]:
    """Every claim of `executor_output`; one without a verified excerpt has nothing to be judged on."""
    items = []
    for claim in executor_output.claims:
        passed = gatekeeper_result.passed_for(claim.claim_id)
        excerpts = list(
            {
                binding.source_label(): VerifiedExcerpt(
                    source=binding.source_label(), text=(binding.matched_text or "")[:EXCERPT_CHARS]
                )
                for binding in passed
            }.values()
        )
        evidence = [binding.matched_text or "" for binding in passed]
        missing = unsupported_facts(claim.claim_text, evidence, names=names)
        found = [token.surface for token in fact_tokens(claim.claim_text, names)]
        said = own_words(
            claim.claim_text, [b.matched_text or "" for b in passed if b.raw_path != NO_EVIDENCE_PATH]
        )
        denials = [
            denial
            for binding in passed
            if (
                denial := claim_denial(
                    claim.claim_text if binding.raw_path == NO_EVIDENCE_PATH else said,
                    ref_text=binding.matched_text or "",
                    raw_path=binding.raw_path,
                )
            )
        ]
        items.append(
            ClaimUnderCheck(
                claim_id=claim.claim_id,
                claim_type=claim.claim_type,
                claim=claim.claim_text,
                excerpts=excerpts,
                facts_in_excerpts=list(dict.fromkeys(t for t in found if t not in missing)),
                facts_not_in_excerpts=missing,
                polarity=denials[0] if denials else CONSISTENT,
            )
        )
    return items


def agrees_with_code(claim: ClaimUnderCheck, verification: str) -> bool:
    """Whether a verdict says what code's own findings say: supported when every fact token is in the
    excerpts and the polarity agrees, not supported otherwise."""
    code_finds_support = not claim.facts_not_in_excerpts and claim.polarity == CONSISTENT
    return (verification in SUPPORTING) == code_finds_support


def code_findings_text(claim: ClaimUnderCheck) -> str:
    """Code's findings in a sentence, for a judgement whose own reason cannot be used."""
    found = "、".join(claim.facts_in_excerpts) or "无"
    missing = "、".join(claim.facts_not_in_excerpts) or "无"
    return f"代码比对：摘录中有 {found}；摘录中没有 {missing}；肯定否定：{claim.polarity}"
