"""Claims beside their checked evidence, per round, read from `verifier_evaluation` (through the one
typed reader, `verifier_record_read`) and the invocations, as typed records.

Shared by the chat page (only what the verifier allowed), the reviewers' admin (everything) and the
case library (verified findings only); `diagnosis.presenters.evidence` says them for a page.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone

from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import Claim, EvidenceBinding
from diagnosis.pipeline.disclosure import claim_shown
from diagnosis.pipeline.gatekeeper import CheckedBinding
from diagnosis.pipeline.investigation.timeline import Timeline, timeline_of
from diagnosis.pipeline.records import RoundRecord, verifier_record_read
from diagnosis.pipeline.scope import SCOPE_RULE
from diagnosis.selectors.charts import SeriesChart, series_chart
from diagnosis.selectors.self_evaluation import (
    AIOPS_RULE_EVALUATION,
    RULE_EVALUATION,
    VERIFIER_EVALUATION,
    self_evaluation_of,
)
from tools.evidence.receipt import Receipt
from tools.evidence.record import EvidenceRecord
from tools.evidence.result import ToolResult

LIVE_STATUSES = (DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING)
UNCHECKED = "unchecked"


@dataclass(frozen=True)
class CitedEvidence:
    """One evidence binding of a claim: the gatekeeper's verdict on it (`unchecked` for the executor's
    own, which no check reached) and what it cites of the session's invocations."""

    tool_name: str
    source_invocation_id: int | None
    raw_path: str
    status: str
    rule: str
    similarity: float | None
    excerpt: str
    # What the gatekeeper matched in the tool output, else the excerpt as cited.
    matched_text: str
    # The cited evidence ref's text; None when the invocation or the ref is not in the session.
    ref_text: str | None = None
    record: EvidenceRecord | None = None
    # Provenance of the cited invocation: `prometheus`, `demo`, … and where.
    source: str = ""
    source_location: str = ""
    # A range query's cited series.
    series: SeriesChart | None = None
    # The cited invocation's evidence receipt; None when it is not in the session or has none.
    receipt: Receipt | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"


@dataclass(frozen=True)
class CheckedClaim:
    claim_id: str
    claim_type: str
    text: str
    bindings: list[CitedEvidence]
    # The verifier's class of the claim; empty when it was not checked.
    verification: str
    detail: str
    # The rule of the guard that blocked the claim (`scope.excluded_topic`, …); empty for a claim
    # the guards kept, which is listed with the bindings they kept.
    blocked_by: str = ""
    # Whether the user was shown this claim: only the final round's, by `claim_shown`.
    shown: bool = False

    @property
    def blocked(self) -> bool:
        return bool(self.blocked_by)


@dataclass(frozen=True)
class CheckedRound:
    record: RoundRecord
    claims: list[CheckedClaim]


@dataclass(frozen=True)
class StageState:
    """`done`, `active`, `pending`, `skipped`, `failed` or `not_run`, for one agent's latest round."""

    agent: str
    state: str


@dataclass(frozen=True)
class Progress:
    """A running session so far: its stage, tool calls and time since it started."""

    stage: str
    round: int
    tool_calls: int
    elapsed_seconds: int


@dataclass
class SessionEvidence:
    """What the chat page may show of one session: live stages, and once done only the claims its
    output type may show, with their passed bindings; the others counted, never listed."""

    session: DiagnosisSession
    stages: list[StageState]
    live: bool
    claims: list[CheckedClaim] = field(default_factory=list)
    # When no claim is shown (a rejected round): the gatekeeper-verified bindings of the kept claims.
    verified_bindings: list[CitedEvidence] = field(default_factory=list)
    # Claims that did not pass verification, and the blocking rule of each claim a guard blocked.
    hidden_claim_count: int = 0
    blocked_rules: list[str] = field(default_factory=list)
    uses_demo_data: bool = False
    progress: Progress | None = None
    # Each invocation's source by id, for naming the answer's references.
    sources: dict[int, str] = field(default_factory=dict)
    # The moves the answer's investigation names, over time (a cause or what-changed answer).
    timeline: Timeline | None = None

    @property
    def shown_bindings(self) -> list[CitedEvidence]:
        return [binding for claim in self.claims for binding in claim.bindings] + self.verified_bindings


@dataclass(frozen=True)
class SessionCall:
    """One recorded call of the session: its row (for its provenance) and what it returned, typed."""

    invocation: ToolInvocation
    result: ToolResult


def _cited_evidence(
    binding: CheckedBinding | EvidenceBinding, calls: dict[int, SessionCall]
) -> CitedEvidence:
    # The gatekeeper's record of a binding carries its verdict; the executor's alone is unchecked.
    checked = binding if isinstance(binding, CheckedBinding) else None
    invocation_id = binding.source_invocation_id
    call = calls.get(invocation_id) if invocation_id is not None else None
    ref = call.result.ref_at(binding.raw_path) if call is not None else None
    raw_path = binding.raw_path or ""
    excerpt = binding.evidence_excerpt
    matched = (checked.matched_text if checked else None) or excerpt
    return CitedEvidence(
        tool_name=binding.tool_name,
        source_invocation_id=invocation_id,
        raw_path=raw_path,
        status=checked.status if checked else UNCHECKED,
        rule=(checked.rule if checked else None) or "",
        similarity=checked.similarity if checked else None,
        excerpt=excerpt,
        matched_text=matched,
        ref_text=ref.text if ref is not None else None,
        record=call.result.record_at(raw_path) if call is not None else None,
        source=call.invocation.source if call is not None else "",
        source_location=call.invocation.source_location if call is not None else "",
        receipt=call.invocation.receipt_record if call is not None else None,
        series=None
        if call is None
        else series_chart(
            result=call.result, raw_path=raw_path, session_results=[each.result for each in calls.values()]
        ),
    )


def _blocking_rules(record: RoundRecord) -> dict[str, str]:
    """Each blocked claim's guard, as the round recorded it; for rows written before that, the rule of
    the last warning about it (a guard that drops a binding warns too, but writes the blocking one last)."""
    blocked = {claim.claim_id for claim in record.blocked_claims}
    rules = {}
    for warning in [*record.gatekeeper_result.warnings, *record.guard_warnings]:
        if warning.claim_id in blocked:
            rules[warning.claim_id] = warning.rule
    return rules | record.blocked_by


def _checked_claims(record: RoundRecord, calls: dict[int, SessionCall]) -> list[CheckedClaim]:
    """The claims the guards kept (what was verified and composed), then those they blocked."""
    checks = {check.claim_id: check for check in record.claim_checks}
    checked_bindings: dict[str, list[CheckedBinding]] = {}
    for checked in record.gatekeeper_result.checked_bindings:
        checked_bindings.setdefault(checked.claim_id, []).append(checked)
    blocking_rules = _blocking_rules(record)

    def checked_claim(claim: Claim, *, blocked_by: str = "") -> CheckedClaim:
        check = checks.get(claim.claim_id)
        bindings = checked_bindings.get(claim.claim_id) or claim.evidence_bindings
        return CheckedClaim(
            claim_id=claim.claim_id,
            claim_type=claim.claim_type,
            text=claim.claim_text,
            bindings=[_cited_evidence(binding, calls) for binding in bindings],
            verification=check.verification if check else "",
            detail=check.detail if check else "",
            blocked_by=blocked_by,
        )

    return [
        *(checked_claim(claim) for claim in record.executor_structured_output.claims),
        # A blocked claim without its warning is from a row written before the focus guard: the
        # scope guard was the only one that blocked.
        *(
            checked_claim(claim, blocked_by=blocking_rules.get(claim.claim_id, SCOPE_RULE))
            for claim in record.blocked_claims
        ),
    ]


def verifier_rounds(*, record: RoundRecord) -> list[RoundRecord]:
    """Every round's record, oldest first (earlier rounds under `rounds`, the last at the top)."""
    by_round = {earlier.round: earlier for earlier in record.rounds}
    by_round[record.round] = record
    return [by_round[number] for number in sorted(by_round)]


def _calls_by_id(session: DiagnosisSession) -> dict[int, SessionCall]:
    # session.tool_invocations.all() reuses a prefetch when the caller made one.
    return {
        invocation.pk: SessionCall(invocation=invocation, result=invocation.tool_result())
        for invocation in session.tool_invocations.all()
    }


def session_rounds(*, session: DiagnosisSession) -> list[CheckedRound]:
    """Each round's claims, checked bindings and verifier classes; the final round's claims marked
    `shown` where the session's output type let the user see them."""
    record = verifier_record_read(self_evaluation_of(session=session).get(VERIFIER_EVALUATION))
    if record is None:
        return []
    calls = _calls_by_id(session)
    rounds = [
        CheckedRound(record=each, claims=_checked_claims(each, calls))
        for each in verifier_rounds(record=record)
    ]
    if rounds:
        final = rounds[-1]
        rounds[-1] = replace(
            final,
            claims=[
                replace(
                    claim,
                    shown=claim_shown(
                        output_type=session.output_type,
                        verification=claim.verification,
                        blocked=claim.blocked,
                    ),
                )
                for claim in final.claims
            ],
        )
    return rounds


def session_slots(*, session: DiagnosisSession) -> dict:
    """The non-verifier self_evaluation slots for the admin (the verifier slot is shown per round)."""
    container = self_evaluation_of(session=session)
    return {
        "rule_evaluation": container.get(RULE_EVALUATION) or {},
        "aiops_rule_evaluation": container.get(AIOPS_RULE_EVALUATION) or {},
    }


STAGE_ORDER = [agent for agent, _label in AgentStep.Agent.choices]


def _stage_state(session: DiagnosisSession, agent: str, step: AgentStep | None) -> str:
    if step is not None:
        return {"ok": "done", "fallback": "done"}.get(step.status, step.status)
    if session.status in LIVE_STATUSES:
        # A running round's steps are written with its record: the stages before the current one are done.
        if session.current_stage in STAGE_ORDER:
            current = STAGE_ORDER.index(session.current_stage)
            if STAGE_ORDER.index(agent) < current:
                return "done"
        return "active" if session.current_stage == agent else "pending"
    return "not_run"


def _progress(session: DiagnosisSession, *, now: datetime) -> Progress:
    started = session.started_at or session.created_at
    return Progress(
        stage=session.current_stage,
        round=session.rounds or 1,
        tool_calls=len(session.tool_invocations.all()),
        elapsed_seconds=max(0, int((now - started).total_seconds())),
    )


def _stages(session: DiagnosisSession) -> list[StageState]:
    steps = list(session.steps.all())
    latest_round = max((step.round for step in steps), default=1)
    if session.status in LIVE_STATUSES and session.rounds:
        latest_round = session.rounds  # a retried round runs before its steps are written
    latest = {step.agent: step for step in steps if step.round == latest_round}
    return [
        StageState(agent=agent, state=_stage_state(session, agent, latest.get(agent)))
        for agent in STAGE_ORDER
    ]


def session_evidence(*, session: DiagnosisSession) -> SessionEvidence:
    """What the chat page may show of the session.

    Other claims are counted, never listed: no blocked, unverified or DEGRADED claim reaches the user.
    When no claim is shown (a rejected round), only the gatekeeper-verified bindings are listed.
    """
    evidence = SessionEvidence(session=session, stages=_stages(session), live=session.status in LIVE_STATUSES)
    if evidence.live:
        evidence.progress = _progress(session, now=timezone.now())
        return evidence
    evidence.uses_demo_data = any(invocation.is_demo for invocation in session.tool_invocations.all())
    evidence.sources = invocation_sources(sessions=[session])
    rounds = session_rounds(session=session)
    if not rounds:
        return evidence
    claims = rounds[-1].claims
    evidence.claims = [
        replace(claim, bindings=[binding for binding in claim.bindings if binding.passed])
        for claim in claims
        if claim.shown
    ]
    evidence.hidden_claim_count = sum(1 for claim in claims if not claim.shown and not claim.blocked)
    evidence.blocked_rules = [claim.blocked_by for claim in claims if claim.blocked]
    if not evidence.claims:
        evidence.verified_bindings = [
            binding for claim in claims if not claim.blocked for binding in claim.bindings if binding.passed
        ]
    evidence.timeline = answer_timeline(session=session, record=rounds[-1].record)
    return evidence


def answer_timeline(*, session: DiagnosisSession, record: RoundRecord) -> Timeline | None:
    """The timeline of the moves the answer's investigation names: of the final round's filled slots
    whose conclusion the answer says (a slot the gatekeeper refused is not in it)."""
    marks = [
        mark
        for slot in record.slots
        if slot.filled and slot.timeline and slot.conclusion in (session.answer or "")
        for mark in slot.timeline
    ]
    if not marks:
        return None
    results = {call_id: call.result for call_id, call in _calls_by_id(session).items()}
    return timeline_of(marks, results)


def invocation_sources(*, sessions: list[DiagnosisSession]) -> dict[int, str]:
    """Each invocation's source (`alertmanager`, `demo`, …) by id, for naming answer references."""
    return {
        invocation.pk: invocation.source
        for session in sessions
        for invocation in session.tool_invocations.all()
    }
