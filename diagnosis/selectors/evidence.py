"""Claims beside their checked evidence, per round, read from `verifier_evaluation` (through the one
typed reader, `verifier_record_read`) and the invocations.

Shared by the chat page (only what the verifier allowed) and the reviewers' admin (everything).
Strings are returned raw; templates escape them. A highlight is split into before / match / after
so the template can wrap the match in <mark> without building HTML here.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rapidfuzz import fuzz

from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.pipeline.contracts import Claim, EvidenceBinding, record_at
from diagnosis.pipeline.disclosure import claim_shown
from diagnosis.pipeline.gatekeeper import CheckedBinding
from diagnosis.pipeline.records import RoundRecord, VerifierEvaluation, verifier_record_read
from diagnosis.pipeline.routing import OUTPUT_TYPE_TONES
from diagnosis.pipeline.scope import FOCUS_RULE, SCOPE_RULE
from diagnosis.selectors.charts import SeriesChart, series_chart
from diagnosis.selectors.self_evaluation import (
    AIOPS_RULE_EVALUATION,
    RULE_EVALUATION,
    VERIFIER_EVALUATION,
    self_evaluation_of,
)
from diagnosis.selectors.wording import AnswerReferences, evidence_anchor, reference_label

# Below this rapidfuzz alignment score a fuzzy highlight would mark the wrong words: mark nothing.
FUZZY_HIGHLIGHT_MIN_SCORE = 70
# Keys of a round's verifier record that RoundView lays out itself; any other key goes to `extra`.
ROUND_KEYS_LAID_OUT = frozenset(
    {
        "verdict",
        "groundedness_score",
        "critical_fact_count",
        "claim_checks",
        "facts_checked",
        "rationale",
        "round",
        "rounds",
        "executor_structured_output",
        "gatekeeper_result",
        "composer_output",
        "executor_output_parse_status",
        "tool_trace_summary",
        "retry_context",
        "blocked_claims",
    }
)

VERIFICATION_LABELS = {
    "direct_observation": _("direct observation"),
    "reasonable_inference": _("reasonable inference"),
    "overstated": _("overstated"),
    "unsupported": _("unsupported"),
    "external_unknown": _("external / unknown"),
    "contradicted": _("contradicted"),
}
VERIFICATION_TONES = {
    "direct_observation": "good",
    "reasonable_inference": "fair",
    "overstated": "warn",
    "unsupported": "warn",
    "external_unknown": "bad",
    "contradicted": "bad",
}
FACT_LABELS = {
    "direct_evidence": _("direct evidence"),
    "indirect_support": _("indirect support"),
    "no_evidence": _("no evidence"),
    "contradicted": _("contradicted"),
}
CLAIM_TYPE_LABELS = {
    "observation": _("observation"),
    "negative_observation": _("negative observation"),
    "root_cause": _("root cause"),
    "risk": _("risk"),
}
# The guard that blocked a claim (its warning rule), as the panel and the admin name it.
BLOCKING_RULE_LABELS = {
    SCOPE_RULE: _("an excluded topic"),
    FOCUS_RULE: _("a subject outside the question"),
}
VERDICT_TONES = {"PASS": "good", "LOW_CONFID": "warn", "REJECT": "bad"}
STAGE_STATE_LABELS = {
    "done": _("done"),
    "active": _("in progress"),
    "pending": _("waiting"),
    "skipped": _("skipped"),
    "failed": _("failed"),
    "not_run": _("not run"),
}
BINDING_STATUS_LABELS = {
    "pass": _("citation verified"),
    "fail": _("citation failed"),
    "unchecked": _("not checked"),
}
LIVE_STATUSES = (DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING)
# One badge per claim on the chat page: what the check found, said for the kind of claim it is.
SHOWN_CLAIM_BADGES = {
    ("direct_observation", "observation"): "已证实",
    ("direct_observation", "negative_observation"): "未找到记录",
    ("direct_observation", "root_cause"): "已证实的原因",
    ("direct_observation", "risk"): "已证实的风险",
}
INFERENCE_BADGE = "合理推断"


DEMO_SOURCE = "demo"
DEMO_LABEL = "演示数据"


@dataclass(frozen=True)
class Highlight:
    before: str
    match: str
    after: str


@dataclass(frozen=True)
class BindingView:
    tool_name: str
    source_invocation_id: int | None
    raw_path: str
    status: str
    rule: str
    similarity: float | None
    excerpt: str
    ref: Highlight | None
    record: dict | None
    # Provenance of the cited invocation (contracts §11): `prometheus`, `demo`, … and where.
    source: str = ""
    source_location: str = ""
    # A range query's cited series, drawn beside the excerpt.
    chart: SeriesChart | None = None

    @property
    def source_label(self) -> str:
        if self.source == DEMO_SOURCE:
            return DEMO_LABEL
        return " ".join(part for part in (self.source, self.source_location) if part)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def reference_label(self) -> str:
        """`Alertmanager 告警 #3`, as the engineer's page names this evidence."""
        return reference_label(
            tool_name=self.tool_name,
            invocation_id=self.source_invocation_id,
            raw_path=self.raw_path,
            source=self.source,
        )

    @property
    def anchor(self) -> str:
        return evidence_anchor(invocation_id=self.source_invocation_id, raw_path=self.raw_path)

    @property
    def status_label(self) -> str:
        return BINDING_STATUS_LABELS.get(self.status, self.status)

    @property
    def record_json(self) -> str:
        return "" if self.record is None else json.dumps(self.record, ensure_ascii=False, indent=2)


@dataclass(frozen=True)
class ClaimView:
    claim_id: str
    claim_type: str
    claim_type_label: str
    text: str
    bindings: list[BindingView]
    verification: str
    verification_label: str
    verification_tone: str
    detail: str
    # The rule of the guard that blocked the claim (`scope.excluded_topic`, …); empty for a claim
    # the guards kept, which is shown with the bindings they kept.
    blocked_by: str = ""
    # Whether the user was shown this claim: only the final round's, by `claim_shown`.
    shown: bool = False

    @property
    def blocked(self) -> bool:
        return bool(self.blocked_by)

    @property
    def blocked_label(self) -> str:
        return str(BLOCKING_RULE_LABELS.get(self.blocked_by, self.blocked_by))

    @property
    def badge_label(self) -> str:
        """The claim's one badge: its check's outcome for its kind (a no-hit reads 未找到记录)."""
        if self.verification == "reasonable_inference":
            return INFERENCE_BADGE
        return SHOWN_CLAIM_BADGES.get((self.verification, self.claim_type), str(self.verification_label))

    @property
    def repeats_excerpt(self) -> bool:
        """The claim says nothing but its quoted evidence: the quote is shown, not the text again."""
        quoted = {" ".join(binding.excerpt.split()) for binding in self.bindings}
        return bool(self.bindings) and quoted == {" ".join(self.text.split())}


@dataclass(frozen=True)
class FactView:
    fact: str
    is_critical: bool
    label: str
    detail: str


@dataclass(frozen=True)
class RoundView:
    round: int
    verdict: str
    groundedness_score: float | None
    critical_fact_count: int | None
    claims: list[ClaimView]
    facts: list[FactView]
    rationale: str
    gatekeeper: dict
    guard_warnings: list[dict]
    composer_output: dict
    parse_status: dict
    retry_context: dict
    tool_trace_summary: list[dict]
    hypotheses: list[str]
    missing_info: list[str]
    recommended_actions: list[str]
    extra: dict


@dataclass(frozen=True)
class StageView:
    agent: str
    label: str
    state: str

    @property
    def state_label(self) -> str:
        return STAGE_STATE_LABELS.get(self.state, self.state)


@dataclass(frozen=True)
class ProgressView:
    """The live line of a running session: stage, tool calls so far, time since it started."""

    stage_label: str
    round: int
    tool_calls: int
    elapsed_seconds: int


@dataclass
class SessionPanel:
    """What the chat page shows for one session."""

    session: DiagnosisSession
    stages: list[StageView]
    live: bool
    output_type_tone: str
    verdict_tone: str
    claims: list[ClaimView] = field(default_factory=list)
    verified_bindings: list[BindingView] = field(default_factory=list)
    # Claims that did not pass verification, and claims a guard blocked, by the guard's label.
    hidden_claim_count: int = 0
    blocked_claim_counts: list[tuple[str, int]] = field(default_factory=list)
    # Some evidence came from the demo world: the page says 演示数据 beside the answer.
    uses_demo_data: bool = False
    progress: ProgressView | None = None
    # The answer's evidence references: their sources, and which are evidence cards on this page.
    references: AnswerReferences = field(default_factory=AnswerReferences)


def _compacted(text: str) -> tuple[str, list[int]]:
    """`text` without spaces and punctuation, case- and width-folded, with each kept char's position."""
    chars, positions = [], []
    for position, original in enumerate(text):
        for char in unicodedata.normalize("NFKC", original).casefold():
            if unicodedata.category(char)[0] not in "PZS":
                chars.append(char)
                positions.append(position)
    return "".join(chars), positions


def _split(text: str, start: int, end: int) -> Highlight:
    return Highlight(text[:start], text[start:end], text[end:])


def excerpt_highlight(*, text: str, excerpt: str) -> Highlight:
    """Where `excerpt` sits in `text`: exactly, then ignoring spacing, punctuation, case and width
    (the gatekeeper's tolerance), then at the best fuzzy alignment if it is close enough."""
    if not text or not excerpt:
        return Highlight(text, "", "")
    start = text.find(excerpt)
    if start >= 0:
        return _split(text, start, start + len(excerpt))
    compact_text, positions = _compacted(text)
    compact_excerpt, _positions = _compacted(excerpt)
    start = compact_text.find(compact_excerpt) if compact_excerpt else -1
    if start >= 0:
        return _split(text, positions[start], positions[start + len(compact_excerpt) - 1] + 1)
    alignment = fuzz.partial_ratio_alignment(excerpt, text)
    if alignment is None or alignment.score < FUZZY_HIGHLIGHT_MIN_SCORE:
        return Highlight(text, "", "")
    start, end = alignment.dest_start, alignment.dest_end
    # An alignment may stop inside a word: widen it so the mark never cuts a name or a number.
    while start > 0 and _is_ascii_word(text[start - 1]) and _is_ascii_word(text[start]):
        start -= 1
    while end < len(text) and _is_ascii_word(text[end]) and _is_ascii_word(text[end - 1]):
        end += 1
    return _split(text, start, end)


def _is_ascii_word(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _ref_text(invocation: ToolInvocation | None, raw_path: str) -> str | None:
    if invocation is None:
        return None
    for ref in invocation.evidence_refs:
        if ref.get("raw_path") == raw_path:
            return ref.get("text", "")
    return None


def _binding_view(
    binding: CheckedBinding | EvidenceBinding, invocations: dict[int, ToolInvocation]
) -> BindingView:
    # The gatekeeper's record of a binding carries its verdict; the executor's alone is unchecked.
    checked = binding if isinstance(binding, CheckedBinding) else None
    invocation_id = binding.source_invocation_id
    invocation = invocations.get(invocation_id) if invocation_id is not None else None
    raw_path = binding.raw_path or ""
    excerpt = binding.evidence_excerpt
    matched = (checked.matched_text if checked else None) or excerpt
    ref_text = _ref_text(invocation, raw_path)
    return BindingView(
        tool_name=binding.tool_name,
        source_invocation_id=invocation_id,
        raw_path=raw_path,
        status=checked.status if checked else "unchecked",
        rule=(checked.rule if checked else None) or "",
        similarity=checked.similarity if checked else None,
        excerpt=excerpt,
        ref=None if ref_text is None else excerpt_highlight(text=ref_text, excerpt=matched),
        record=record_at(invocation.output, raw_path) if invocation is not None else None,
        source=invocation.source if invocation is not None else "",
        source_location=invocation.source_location if invocation is not None else "",
        chart=None
        if invocation is None
        else series_chart(
            invocation=invocation,
            raw_path=raw_path,
            excerpt=matched,
            session_invocations=invocations.values(),
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


def _claim_views(record: RoundRecord, invocations: dict[int, ToolInvocation]) -> list[ClaimView]:
    """The claims the guards kept (what was verified and composed), then those they blocked."""
    checks = {check.claim_id: check for check in record.claim_checks}
    checked_bindings: dict[str, list[CheckedBinding]] = {}
    for checked in record.gatekeeper_result.checked_bindings:
        checked_bindings.setdefault(checked.claim_id, []).append(checked)
    blocking_rules = _blocking_rules(record)

    def view(claim: Claim, *, blocked_by: str = "") -> ClaimView:
        check = checks.get(claim.claim_id)
        verification = check.verification if check else ""
        bindings = checked_bindings.get(claim.claim_id) or claim.evidence_bindings
        return ClaimView(
            claim_id=claim.claim_id,
            claim_type=claim.claim_type,
            claim_type_label=CLAIM_TYPE_LABELS.get(claim.claim_type, claim.claim_type),
            text=claim.claim_text,
            bindings=[_binding_view(binding, invocations) for binding in bindings],
            verification=verification,
            verification_label=VERIFICATION_LABELS.get(verification, _("not checked")),
            verification_tone=VERIFICATION_TONES.get(verification, "none"),
            detail=check.detail if check else "",
            blocked_by=blocked_by,
        )

    return [
        *(view(claim) for claim in record.executor_structured_output.claims),
        # A blocked claim without its warning is from a row written before the focus guard: the
        # scope guard was the only one that blocked.
        *(
            view(claim, blocked_by=blocking_rules.get(claim.claim_id, SCOPE_RULE))
            for claim in record.blocked_claims
        ),
    ]


def _round_view(record: RoundRecord, invocations: dict[int, ToolInvocation]) -> RoundView:
    executor_output = record.executor_structured_output
    return RoundView(
        round=record.round,
        verdict=record.verdict,
        groundedness_score=record.groundedness_score,
        critical_fact_count=record.critical_fact_count,
        claims=_claim_views(record, invocations),
        facts=[
            FactView(
                fact=fact.fact,
                is_critical=fact.is_critical,
                label=FACT_LABELS.get(fact.verification, fact.verification),
                detail=fact.detail,
            )
            for fact in record.facts_checked
        ],
        rationale=record.rationale,
        gatekeeper=record.gatekeeper_result.model_dump(),
        guard_warnings=[warning.model_dump() for warning in record.guard_warnings],
        composer_output=record.composer_output.model_dump() if isinstance(record, VerifierEvaluation) else {},
        parse_status=record.executor_output_parse_status,
        retry_context=record.retry_context or {},
        tool_trace_summary=record.tool_trace_summary,
        hypotheses=executor_output.hypotheses,
        missing_info=executor_output.missing_info,
        recommended_actions=executor_output.recommended_actions,
        extra={key: value for key, value in record.model_dump().items() if key not in ROUND_KEYS_LAID_OUT},
    )


def verifier_rounds(*, record: RoundRecord) -> list[RoundRecord]:
    """Every round's record, oldest first (earlier rounds under `rounds`, the last at the top)."""
    by_round = {earlier.round: earlier for earlier in record.rounds}
    by_round[record.round] = record
    return [by_round[number] for number in sorted(by_round)]


def _invocations_by_id(session: DiagnosisSession) -> dict[int, ToolInvocation]:
    # session.tool_invocations.all() reuses a prefetch when the caller made one.
    return {invocation.pk: invocation for invocation in session.tool_invocations.all()}


def session_rounds(*, session: DiagnosisSession) -> list[RoundView]:
    """Each round's claims, checked bindings and verifier classes, for reviewers; the final round's
    claims marked `shown` where the session's output type let the user see them."""
    record = verifier_record_read(self_evaluation_of(session=session).get(VERIFIER_EVALUATION))
    if record is None:
        return []
    invocations = _invocations_by_id(session)
    rounds = [_round_view(each, invocations) for each in verifier_rounds(record=record)]
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


def _progress(session: DiagnosisSession, *, now: datetime) -> ProgressView:
    started = session.started_at or session.created_at
    return ProgressView(
        stage_label=dict(AgentStep.Agent.choices).get(session.current_stage, ""),
        round=session.rounds or 1,
        tool_calls=len(session.tool_invocations.all()),
        elapsed_seconds=max(0, int((now - started).total_seconds())),
    )


def _stages(session: DiagnosisSession) -> list[StageView]:
    steps = list(session.steps.all())
    latest_round = max((step.round for step in steps), default=1)
    if session.status in LIVE_STATUSES and session.rounds:
        latest_round = session.rounds  # a retried round runs before its steps are written
    latest = {step.agent: step for step in steps if step.round == latest_round}
    return [
        StageView(
            agent=agent,
            label=label,
            state=_stage_state(session, agent, latest.get(agent)),
        )
        for agent, label in AgentStep.Agent.choices
    ]


def session_panel(*, session: DiagnosisSession) -> SessionPanel:
    """The chat page's view: live stages, and once done only the claims its output type may show.

    Other claims are counted, never shown: no blocked, unverified or DEGRADED claim reaches the user.
    When no claim is shown (a rejected round), only the gatekeeper-verified excerpts are listed.
    """
    panel = SessionPanel(
        session=session,
        stages=_stages(session),
        live=session.status in LIVE_STATUSES,
        output_type_tone=OUTPUT_TYPE_TONES.get(session.output_type, "none"),
        verdict_tone=VERDICT_TONES.get(session.verdict, "none"),
    )
    if panel.live:
        panel.progress = _progress(session, now=timezone.now())
        return panel
    panel.uses_demo_data = any(invocation.is_demo for invocation in session.tool_invocations.all())
    panel.references = AnswerReferences(sources=invocation_sources(sessions=[session]))
    rounds = session_rounds(session=session)
    if not rounds:
        return panel
    claims = rounds[-1].claims
    panel.claims = [
        replace(claim, bindings=[binding for binding in claim.bindings if binding.passed])
        for claim in claims
        if claim.shown
    ]
    panel.hidden_claim_count = sum(1 for claim in claims if not claim.shown and not claim.blocked)
    blocked = Counter(claim.blocked_label for claim in claims if claim.blocked)
    panel.blocked_claim_counts = sorted(blocked.items())
    if not panel.claims:
        panel.verified_bindings = [
            binding for claim in claims if not claim.blocked for binding in claim.bindings if binding.passed
        ]
    shown = [binding for claim in panel.claims for binding in claim.bindings] + panel.verified_bindings
    panel.references = replace(
        panel.references,
        cards=frozenset((binding.source_invocation_id, binding.raw_path) for binding in shown),
    )
    return panel


def invocation_sources(*, sessions: list[DiagnosisSession]) -> dict[int, str]:
    """Each invocation's source (`alertmanager`, `demo`, …) by id, for naming answer references."""
    return {
        invocation.pk: invocation.source
        for session in sessions
        for invocation in session.tool_invocations.all()
    }
