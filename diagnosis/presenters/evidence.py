"""Claims and their checked evidence as the pages show them: labels, CSS tones, badges, highlights
and charts, from the records of `diagnosis.selectors.evidence`.

Strings are returned raw; templates escape them. A highlight is split into before / match / after
so the template can wrap the match in <mark> without building HTML here.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from dataclasses import dataclass, field, fields
from functools import cached_property

from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _
from rapidfuzz import fuzz

from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.records import VerifierEvaluation
from diagnosis.pipeline.routing import OutputType
from diagnosis.pipeline.scope import FOCUS_RULE, SCOPE_RULE
from diagnosis.presenters.answer import stored_answer_html
from diagnosis.presenters.charts import ChartView, TimelineView, timeline_view
from diagnosis.presenters.wording import AnswerReferences, evidence_anchor, reference_label
from diagnosis.selectors.evidence import (
    CheckedClaim,
    CheckedRound,
    CitedEvidence,
    Progress,
    SessionEvidence,
    StageState,
)
from tools.sources import DEMO, DEMO_LABEL

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
OUTPUT_TYPE_TONES = {
    OutputType.NORMAL: "good",
    OutputType.LOW_CONFID_WITH_DISCLAIMER: "warn",
    OutputType.DEGRADED: "bad",
}
STAGE_STATE_LABELS = {
    "done": _("done"),
    "active": _("in progress"),
    "pending": _("waiting"),
    "skipped": _("skipped"),
    "failed": _("failed"),
    "not_run": _("not run"),
}
STAGE_LABELS = dict(AgentStep.Agent.choices)
BINDING_STATUS_LABELS = {
    "pass": _("citation verified"),
    "fail": _("citation failed"),
    "unchecked": _("not checked"),
}
# One badge per claim on the chat page: what the check found, said for the kind of claim it is.
SHOWN_CLAIM_BADGES = {
    ("direct_observation", "observation"): "已证实",
    ("direct_observation", "negative_observation"): "未找到记录",
    ("direct_observation", "root_cause"): "已证实的原因",
    ("direct_observation", "risk"): "已证实的风险",
}
INFERENCE_BADGE = "合理推断"


def widened(view_type: type, record, **changes):
    """A record as its view: the record's fields (some replaced by `changes`) under the view's type,
    which adds what the page shows of them."""
    return view_type(**{item.name: getattr(record, item.name) for item in fields(record)} | changes)


@dataclass(frozen=True)
class Highlight:
    before: str
    match: str
    after: str


@dataclass(frozen=True)
class BindingView(CitedEvidence):
    @cached_property
    def ref(self) -> Highlight | None:
        """The cited ref's text with the matched excerpt marked; None when it is not in the session."""
        if self.ref_text is None:
            return None
        return excerpt_highlight(text=self.ref_text, excerpt=self.matched_text)

    @cached_property
    def chart(self) -> ChartView | None:
        return None if self.series is None else widened(ChartView, self.series)

    @property
    def source_label(self) -> str:
        if self.source == DEMO:
            return DEMO_LABEL
        return " ".join(part for part in (self.source, self.source_location) if part)

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
        return "" if self.record is None else json.dumps(self.record.stored(), ensure_ascii=False, indent=2)


def binding_view(binding: CitedEvidence) -> BindingView:
    return widened(BindingView, binding)


@dataclass(frozen=True)
class ClaimView(CheckedClaim):
    bindings: list[BindingView]

    @property
    def claim_type_label(self) -> str:
        return CLAIM_TYPE_LABELS.get(self.claim_type, self.claim_type)

    @property
    def verification_label(self) -> str:
        return VERIFICATION_LABELS.get(self.verification, _("not checked"))

    @property
    def verification_tone(self) -> str:
        return VERIFICATION_TONES.get(self.verification, "none")

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


def claim_view(claim: CheckedClaim) -> ClaimView:
    return widened(ClaimView, claim, bindings=[binding_view(binding) for binding in claim.bindings])


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


def round_view(checked: CheckedRound) -> RoundView:
    record = checked.record
    executor_output = record.executor_structured_output
    return RoundView(
        round=record.round,
        verdict=record.verdict,
        groundedness_score=record.groundedness_score,
        critical_fact_count=record.critical_fact_count,
        claims=[claim_view(claim) for claim in checked.claims],
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


@dataclass(frozen=True)
class StageView(StageState):
    @property
    def label(self) -> str:
        return STAGE_LABELS[self.agent]

    @property
    def state_label(self) -> str:
        return STAGE_STATE_LABELS.get(self.state, self.state)


@dataclass(frozen=True)
class ProgressView(Progress):
    """The live line of a running session: stage, tool calls so far, time since it started."""

    @property
    def stage_label(self) -> str:
        return STAGE_LABELS.get(self.stage, "")


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
    # The answer rendered from its record; None when the session has none (`stored_answer_html`).
    answer: SafeString | None = None
    # The moves the answer's investigation names, drawn over time.
    timeline: TimelineView | None = None


def session_panel(*, evidence: SessionEvidence) -> SessionPanel:
    """The chat page's panel of a session's evidence record."""
    session = evidence.session
    blocked = Counter(str(BLOCKING_RULE_LABELS.get(rule, rule)) for rule in evidence.blocked_rules)
    references = AnswerReferences(
        sources=evidence.sources,
        cards=frozenset(
            (binding.source_invocation_id, binding.raw_path) for binding in evidence.shown_bindings
        ),
    )
    return SessionPanel(
        session=session,
        stages=[widened(StageView, stage) for stage in evidence.stages],
        live=evidence.live,
        output_type_tone=OUTPUT_TYPE_TONES.get(session.output_type, "none"),
        verdict_tone=VERDICT_TONES.get(session.verdict, "none"),
        claims=[claim_view(claim) for claim in evidence.claims],
        verified_bindings=[binding_view(binding) for binding in evidence.verified_bindings],
        hidden_claim_count=evidence.hidden_claim_count,
        blocked_claim_counts=sorted(blocked.items()),
        uses_demo_data=evidence.uses_demo_data,
        progress=None if evidence.progress is None else widened(ProgressView, evidence.progress),
        references=references,
        answer=stored_answer_html(session.answer_record, references=references),
        timeline=None if evidence.timeline is None else timeline_view(evidence.timeline),
    )


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
