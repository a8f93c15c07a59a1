"""The guards of a round: code, the same for both engines, none knowing which engine ran.

Two kinds, each a small class returning its own typed `GuardResult`:

- claim guards run in order over the executor's output before the gatekeeper: each may drop a
  binding, block a claim or remove an item, never add one (the exclusion guard, the focus guard,
  evidence-as-data, a restated conclusion); an output left with no claim is answered by the slots;
- binding guards run with the gatekeeper: each may only fail a citation the gatekeeper passed, with a
  rule of its own and that rule's severity (the label check: a line called an error it is not);
- verdict guards run after the verdict is computed: each may only cap it (the citation cap from the
  gatekeeper's severity; the coverage guard: PASS only when every ask's slot is filled; the unread-ask
  guard: PASS only when every question word is answered by an ask).

`claim_guards_run`, `bindings_guarded` and `verdict_capped` are the one place their results are
combined: what stays, what was blocked and by which guard, the warnings, the failed citations and the
verdict cap. Adding a guard is one class and one line in `CLAIM_GUARDS`, `BINDING_GUARDS` or
`VERDICT_GUARDS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.asks.slots import coverage_gaps, restated_conclusion
from diagnosis.pipeline.candidates import CANDIDATE_RULE, unranked_candidates_blocked
from diagnosis.pipeline.claim_labels import labels_unsupported
from diagnosis.pipeline.contracts import Claim, ExecutorOutput, Verdict
from diagnosis.pipeline.focus import QuestionFocus, World
from diagnosis.pipeline.gatekeeper import (
    LABEL_UNSUPPORTED,
    BindingKey,
    GatekeeperResult,
    RuleMessage,
    with_binding_failures,
)
from diagnosis.pipeline.injected_commands import evidence_gathering
from diagnosis.pipeline.scope import FOCUS_RULE, SCOPE_RULE, out_of_focus, record_subjects, scope_guard
from diagnosis.pipeline.slot import Slot
from diagnosis.pipeline.verdict import Override, Verification
from tools.evidence.result import ToolResult

EVIDENCE_AS_DATA_RULE = "evidence.not_an_instruction"
CITATION_CAP_RULE = "evidence.citation_cap"
COVERAGE_RULE = "answer.coverage"
UNREAD_RULE = "answer.unread_ask"
RESTATED_RULE = "answer.restated_conclusion"
VERDICT_STRENGTH: dict[str, int] = {"PASS": 2, "LOW_CONFID": 1, "REJECT": 0}


@dataclass(frozen=True)
class RoundContext:
    """What every guard may read about the round: the question, as code read it, and the world."""

    query: str
    focus: QuestionFocus
    excluded_topics: list[str]
    world: World
    # The session's recorded calls, as the toolboxes returned them: what a claim may cite.
    invocations: Sequence[ToolResult]
    # The asks' slots, read and verified by code.
    slots: Sequence[Slot] = ()
    # What the question asks that no ask answers (`未能理解所问：…`, `asks.unread`).
    unread: Sequence[str] = ()


class GuardResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    guard: str
    kept_output: ExecutorOutput
    blocked_claims: list[Claim] = []
    warnings: list[RuleMessage] = []


class ClaimGuard(Protocol):
    name: str

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult: ...


class BindingGuard(Protocol):
    name: str

    def failures(
        self, output: ExecutorOutput, context: RoundContext
    ) -> list[tuple[BindingKey, RuleMessage]]: ...


class VerdictCap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    guard: str
    verdict: Verdict  # the strongest verdict the guard allows
    reason: str
    # What the answer must say it could not do (`未能回答：…`).
    gaps: list[str] = []


class VerdictGuard(Protocol):
    name: str

    def cap(self, *, gatekeeper_result: GatekeeperResult, context: RoundContext) -> VerdictCap | None: ...


class ExclusionGuard:
    """What the user said not to analyse is never verified or composed (`scope.excluded_topic`)."""

    name = SCOPE_RULE

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult:
        scoped = scope_guard(
            executor_output=output,
            excluded_topics=context.excluded_topics,
            vocabulary=context.world.vocabulary,
        )
        return GuardResult(guard=self.name, **scoped.__dict__)


class FocusGuard:
    """Claims about subjects the question did not ask about are blocked (`scope.out_of_focus`)."""

    name = FOCUS_RULE

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult:
        world = context.world
        # The services an investigation named as candidates are what a cause question asks about.
        candidates = [s for slot in context.slots if slot.filled and slot.inference for s in slot.subjects]
        focus = context.focus
        if candidates and focus.names_subjects:
            focus = replace(focus, services=tuple(dict.fromkeys([*focus.services, *candidates])))
        focused = out_of_focus(
            executor_output=output,
            focus=focus,
            subjects=record_subjects(
                invocations=context.invocations,
                inventory=world.inventory,
                service_labels=world.service_labels,
            ),
            inventory=world.inventory,
        )
        return GuardResult(guard=self.name, **focused.__dict__)


class CandidateGuard:
    """In a round that investigated, a root cause is one of the candidates code ranked, with evidence
    cited: one a model adds, or states without a citation, is blocked (`inference.unranked_candidate`)."""

    name = CANDIDATE_RULE

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult:
        world = context.world
        checked = unranked_candidates_blocked(
            output,
            slots=context.slots,
            inventory=world.inventory,
            subjects=record_subjects(
                invocations=context.invocations,
                inventory=world.inventory,
                service_labels=world.service_labels,
            ),
        )
        return GuardResult(guard=self.name, **checked.__dict__)


class EvidenceAsDataGuard:
    """Recommended actions only gather evidence: a remedy, a command or an injected instruction is
    removed, whichever engine (or whichever log line) suggested it. Claims are capped by the verdict
    (a root cause is never a direct observation) and quoted by the composer only as evidence."""

    name = EVIDENCE_AS_DATA_RULE

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult:
        vocabulary = context.world.vocabulary
        kept = [a for a in output.recommended_actions if evidence_gathering(a, vocabulary=vocabulary)]
        warnings = [
            RuleMessage(
                rule=self.name, message=f"建议动作不是取证动作（处置、命令或指令），已移除：{action[:80]}"
            )
            for action in output.recommended_actions
            if action not in kept
        ]
        return GuardResult(
            guard=self.name,
            kept_output=output.model_copy(update={"recommended_actions": kept}),
            warnings=warnings,
        )


class RestatedConclusionGuard:
    """A claim restating a `结论` line is that slot's, already stated and verified by code: blocked as a
    finding, so the answer says it once (measured on a 1.5B model: it copied the lines with their counts,
    which no excerpt holds, and the copies were judged unsupported) (`answer.restated_conclusion`)."""

    name = RESTATED_RULE

    def check(self, output: ExecutorOutput, context: RoundContext) -> GuardResult:
        restated = {
            claim.claim_id: line
            for claim in output.claims
            if (line := restated_conclusion(claim.claim_text, context.slots))
        }
        return GuardResult(
            guard=self.name,
            kept_output=output.model_copy(
                update={"claims": [c for c in output.claims if c.claim_id not in restated]}
            ),
            blocked_claims=[c for c in output.claims if c.claim_id in restated],
            warnings=[
                RuleMessage(
                    rule=self.name,
                    message=f"断言重复了代码写出的结论，按该结论计：{line[:80]}",
                    claim_id=claim_id,
                )
                for claim_id, line in restated.items()
            ],
        )


class LabelCheck:
    """A claim calling a cited log line an error, timeout or slow request needs that property in the
    line (`evidence.label_unsupported`, reject), read by the rule the rules engine labels lines by."""

    name = LABEL_UNSUPPORTED

    def failures(self, output: ExecutorOutput, context: RoundContext) -> list[tuple[BindingKey, RuleMessage]]:
        return [
            (
                (f.claim_id, f.source_invocation_id, f.raw_path),
                RuleMessage(
                    rule=self.name,
                    message=f"query_logs #{f.source_invocation_id} {f.raw_path}：{f.message}",
                    claim_id=f.claim_id,
                ),
            )
            for f in labels_unsupported(
                output.claims, results=context.invocations, vocabulary=context.world.vocabulary
            )
        ]


class CitationCap:
    """The gatekeeper's severity caps the verdict: reject → REJECT, low_confid → LOW_CONFID."""

    name = CITATION_CAP_RULE

    def cap(self, *, gatekeeper_result: GatekeeperResult, context: RoundContext) -> VerdictCap | None:
        rules = "、".join(gatekeeper_result.failed_rules)
        if gatekeeper_result.severity == "reject":
            return VerdictCap(guard=self.name, verdict="REJECT", reason=f"引用核验拒绝（{rules}）")
        if gatekeeper_result.severity == "low_confid":
            return VerdictCap(
                guard=self.name,
                verdict="LOW_CONFID",
                reason=f"引用核验 low_confid（{rules}）封顶为 LOW_CONFID",
            )
        return None


class CoverageGuard:
    """PASS only when every ask's slot is filled by verified evidence; an unfilled slot caps the verdict at
    LOW_CONFID and says what could not be answered, and why."""

    name = COVERAGE_RULE

    def cap(self, *, gatekeeper_result: GatekeeperResult, context: RoundContext) -> VerdictCap | None:
        gaps = coverage_gaps(context.slots)
        if not gaps:
            return None
        return VerdictCap(guard=self.name, verdict="LOW_CONFID", reason="；".join(gaps), gaps=gaps)


class UnreadAskGuard:
    """PASS fails closed: a question word no ask answers (多少、哪、为什么 … with nothing reading it), or a
    service or alert the sources do not know, caps the verdict at LOW_CONFID; the answer says what was
    not understood (the unknown names are already its first gaps, `QuestionFocus.notes`)."""

    name = UNREAD_RULE

    def cap(self, *, gatekeeper_result: GatekeeperResult, context: RoundContext) -> VerdictCap | None:
        gaps = list(context.unread)
        # A request to act alone is answered by code's refusal, whatever names its object.
        acting = bool(context.slots) and all(slot.ask.kind == "action" for slot in context.slots)
        unknown = [] if acting else [name.note() for name in context.focus.unknown]
        if not gaps and not unknown:
            return None
        return VerdictCap(guard=self.name, verdict="LOW_CONFID", reason="；".join([*gaps, *unknown]), gaps=gaps)


# A copy of code's own conclusion is taken out first: it is the slot's, whatever the other guards would
# say of a model claim naming those subjects (a health question names none of the targets it lists).
CLAIM_GUARDS: tuple[ClaimGuard, ...] = (
    RestatedConclusionGuard(),
    ExclusionGuard(),
    FocusGuard(),
    CandidateGuard(),
    EvidenceAsDataGuard(),
)
BINDING_GUARDS: tuple[BindingGuard, ...] = (LabelCheck(),)
VERDICT_GUARDS: tuple[VerdictGuard, ...] = (CitationCap(), CoverageGuard(), UnreadAskGuard())


@dataclass(frozen=True)
class GuardedOutput:
    """The claim guards' results combined: the output verified and composed, and what was taken out."""

    kept_output: ExecutorOutput
    blocked_claims: list[Claim]
    warnings: list[RuleMessage]
    results: list[GuardResult]

    def blocked_by(self) -> dict[str, str]:
        """Each blocked claim's id and the guard that blocked it."""
        return {claim.claim_id: r.guard for r in self.results for claim in r.blocked_claims}


def claim_guards_run(output: ExecutorOutput, context: RoundContext) -> GuardedOutput:
    results = []
    for guard in CLAIM_GUARDS:
        result = guard.check(output, context)
        results.append(result)
        output = result.kept_output
    return GuardedOutput(
        kept_output=output,
        blocked_claims=[claim for result in results for claim in result.blocked_claims],
        warnings=[warning for result in results for warning in result.warnings],
        results=results,
    )


def bindings_guarded(
    gatekeeper_result: GatekeeperResult, *, output: ExecutorOutput, context: RoundContext
) -> GatekeeperResult:
    """The gatekeeper's result with the citations the binding guards fail."""
    failures = [failure for guard in BINDING_GUARDS for failure in guard.failures(output, context)]
    return with_binding_failures(gatekeeper_result, failures)


def verdict_capped(
    verification: Verification,
    *,
    gatekeeper_result: GatekeeperResult,
    context: RoundContext,
) -> Verification:
    """The verdict lowered to the strictest cap of the verdict guards; each cap that lowers it is an override."""
    verdict, score, overrides, gaps = verification.verdict, verification.groundedness_score, [], []
    for guard in VERDICT_GUARDS:
        cap = guard.cap(gatekeeper_result=gatekeeper_result, context=context)
        if cap is None:
            continue
        gaps += cap.gaps
        if VERDICT_STRENGTH[cap.verdict] >= VERDICT_STRENGTH[verdict]:
            continue
        overrides.append(Override(subject="verdict", model=verdict, code=cap.verdict, reason=cap.reason))
        verdict = cap.verdict
        score = 0.0 if verdict == "REJECT" else score
    if not overrides and not gaps:
        return verification
    return verification.model_copy(
        update={
            "verdict": verdict,
            "groundedness_score": score,
            "overrides": [*verification.overrides, *overrides],
            "gaps": list(dict.fromkeys([*gaps, *verification.gaps])),
        }
    )
