"""A model may explain an investigation's root-cause candidates, never add one (§23): in a round that
ran an investigation (a cause or what-changed ask), a root cause a model states is kept only when it
is about the candidates code ranked and cites evidence. Otherwise it is blocked
(`inference.unranked_candidate`), so the conclusion stays code's ranked list.

A claim states a root cause when its type says so, or its own words (its quoted excerpts aside) say
根因 / root cause. A hypothesis cites nothing: one naming a service that is not a candidate is removed.
Pure over the round's slots and the inventory; which engine ran is not known here (the rules engine
states no root cause, so only a model's can be blocked).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.contracts import Claim, ExecutorOutput
from diagnosis.pipeline.focus import Inventory
from diagnosis.pipeline.gatekeeper import RuleMessage
from diagnosis.pipeline.scope import RecordSubject, ScopeResult
from diagnosis.pipeline.slot import Slot

CANDIDATE_RULE = "inference.unranked_candidate"
CAUSE_WORDS = re.compile(r"根因|root\s*causes?", re.IGNORECASE)
NO_EVIDENCE = "根因断言没有引用证据，已拦截：候选只能由代码按证据排出"
NOT_RANKED = "根因断言不在代码排出的根因候选中（{names}），已拦截"
NONE_RANKED = "调查没有排出根因候选，模型提出的根因已拦截"
HYPOTHESIS_NOT_RANKED = "假设涉及的服务不在根因候选中（{names}），已移除"
UNNAMED = "未指明服务"


def ranked_subjects(slots: Sequence[Slot]) -> tuple[set[str], set[str]] | None:
    """The subjects of the candidates the round's investigations ranked, and the services those asked
    about (the symptom an explanation names beside its cause); None when no investigation ran."""
    investigations = [slot for slot in slots if KINDS[slot.ask.kind].investigates]
    if not investigations:
        return None
    ranked = {candidate.subject for slot in investigations if slot.filled for candidate in slot.candidates}
    asked = {name for slot in investigations for name in (slot.ask.service, slot.ask.subject) if name}
    return ranked, asked


def unranked_candidates_blocked(
    output: ExecutorOutput,
    *,
    slots: Sequence[Slot],
    inventory: Inventory,
    subjects: Mapping[tuple[int, str], RecordSubject],
) -> ScopeResult:
    """`output` without the root causes (claims) and hypotheses that are not among the ranked candidates."""
    result = ScopeResult(kept_output=output)
    investigated = ranked_subjects(slots)
    if investigated is None:
        return result
    ranked, asked = investigated
    kept = []
    for claim in output.claims:
        why = _why_blocked(claim, ranked, asked, inventory, subjects)
        if why:
            result.blocked_claims.append(claim)
            result.warnings.append(RuleMessage(rule=CANDIDATE_RULE, message=why, claim_id=claim.claim_id))
        else:
            kept.append(claim)
    hypotheses = []
    for hypothesis in output.hypotheses:
        outside = _outside(set(inventory.services_in(hypothesis)), ranked | asked, inventory)
        if outside:
            result.warnings.append(
                RuleMessage(
                    rule=CANDIDATE_RULE, message=HYPOTHESIS_NOT_RANKED.format(names="、".join(outside))
                )
            )
        else:
            hypotheses.append(hypothesis)
    result.kept_output = output.model_copy(update={"claims": kept, "hypotheses": hypotheses})
    return result


def states_cause(claim: Claim) -> bool:
    if claim.claim_type == "root_cause":
        return True
    own_words = claim.claim_text
    for binding in claim.evidence_bindings:
        if binding.evidence_excerpt:
            own_words = own_words.replace(binding.evidence_excerpt, " ")
    return bool(CAUSE_WORDS.search(own_words))


def _why_blocked(
    claim: Claim,
    ranked: Collection[str],
    asked: Collection[str],
    inventory: Inventory,
    subjects: Mapping[tuple[int, str], RecordSubject],
) -> str:
    if not states_cause(claim):
        return ""
    if not claim.evidence_bindings:
        return NO_EVIDENCE
    if not ranked:
        return NONE_RANKED
    # What it is about: the services it names and those of the records it cites. One of them is a
    # candidate; the others are candidates or the symptom asked about.
    named = set(inventory.services_in(claim.claim_text)) | {
        service
        for binding in claim.evidence_bindings
        for service in subjects.get(
            (binding.source_invocation_id or 0, binding.raw_path or ""), RecordSubject()
        ).services
    }
    outside = _outside(named, {*ranked, *asked}, inventory)
    about_candidate = len(_outside(named, ranked, inventory)) < len(named)
    if outside or not about_candidate:
        return NOT_RANKED.format(names="、".join(outside or sorted(named)) or UNNAMED)
    return ""


def _outside(named: Collection[str], ranked: Collection[str], inventory: Inventory) -> list[str]:
    return sorted(name for name in named if not any(inventory.same_service(name, r) for r in ranked))
