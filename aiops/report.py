"""AIOps analysis: per-alert questions, the `告警分析报告`, and the rule checks.

Each analysed alert is diagnosed by an ordinary verified session (its child). The report is built
by code from what those sessions verified: the composer module's material (confirmed findings and
reasonable inferences with their gatekeeper-passed evidence) and, where nothing was confirmed, the
gatekeeper-passed excerpts alone. Claim text of blocked, unsupported or contradicted claims never
reaches it: gaps are told as counts and failed or empty tool calls, never by repeating a claim.
Alertmanager annotations are unverified input and stay out of the report too.

The light rule checks of the finished report are in `aiops.checks`.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Literal
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone
from pydantic import BaseModel, ConfigDict

from diagnosis.engines.rules import RulesEngine
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.alert_statement import alert_observation
from diagnosis.pipeline.always_firing import ALWAYS_FIRING, record_fires_always
from diagnosis.pipeline.answer import (
    ACTIONS_HEADING,
    DEGRADED_HEADER,
    DISCLAIMER,
    INFERENCES_HEADING,
    NO_CONCLUSION,
    RAW_REFS,
    AnswerRef,
    FailedCitation,
    Quote,
    RefWriter,
    Statement,
    bullets,
    evidence_quote,
    statement_lines,
)
from diagnosis.pipeline.asks.listing import SEVERITY_RANK
from diagnosis.pipeline.composer import composer_material_from_record, degraded_of, verified_quotes
from diagnosis.pipeline.contracts import Claim, record_at
from diagnosis.pipeline.disclosure import output_type_shows_claims
from diagnosis.pipeline.injected_commands import QUOTE_ONLY
from diagnosis.pipeline.investigation.incidents import IncidentFinding
from diagnosis.pipeline.routing import OUTPUT_TYPE_LABELS
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.services.invocations import NO_EVIDENCE
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import ALERTS, LOGS
from tools.loglines import is_error_level, patterns_mined
from tools.numbers import finite_number, number_text
from tools.promql import comparison_of, quoted
from tools.sources import DEMO_LABEL

logger = logging.getLogger(__name__)

OutputType = DiagnosisSession.OutputType

REPORT_TITLE = "告警分析报告"
FIRING, RESOLVED = "firing", "resolved"
# The evidence every analysed alert must have been checked against.
REQUIRED_EVIDENCE_TOOLS = (ALERTS.tool, LOGS.tool)
FAILED_LABEL = "执行失败"
FAILED_GAP = "诊断执行失败，未获得可用证据"
MIXED_RESULTS_NOTE = "部分告警的结论存在证据缺口、已降级或执行失败，请按各告警的输出类型谨慎参考。"
# How a stored report record names its type (`answer_record_of` leaves it to this app).
REPORT_RECORD_TYPE = "aiops_report"


# Error-level log patterns of an alert shown; the runbook steps quoted.
MAX_ERROR_PATTERNS = 5
MAX_RUNBOOK_STEPS = 6
# A sample value as Prometheus writes it (`92`, `0.52`, `1.6450887e+10`), inside text such as `92%`.
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# A runbook section whose title says it holds the steps to take.
STEP_SECTIONS = re.compile(r"排查|处置|处理|步骤|diagnos|mitigat|remediat|steps|response", re.IGNORECASE)


# Labels that tell one alert's instances apart; the per-alert question names them.
IDENTITY_LABELS = ("instance", "job", "namespace", "pod")
SHOWN_VALUE_CHARS = 120


@dataclass(frozen=True)
class AlertSubject:
    """What one child session diagnoses: an alert name on a service (may be unknown) and where it fires."""

    alert_name: str
    service: str
    # (label, value) pairs of `IDENTITY_LABELS` the alert carries, in that order.
    identity: tuple[tuple[str, str], ...] = ()
    # The label the service came from (`service`, `app`, `job`: DIAGNOSIS_SERVICE_LABELS).
    service_label: str = field(default="", compare=False)

    @classmethod
    def of(cls, alert: dict) -> AlertSubject:
        # In `IDENTITY_LABELS` order: a stored JSON object (PostgreSQL jsonb) keeps no key order.
        identity = alert.get("identity") or {}
        service = alert.get("service") or ""
        labels = alert.get("labels") or {}
        return cls(
            alert["alert_name"],
            service,
            tuple((name, identity[name]) for name in IDENTITY_LABELS if identity.get(name)),
            service_label=next(
                (name for name in settings.DIAGNOSIS["SERVICE_LABELS"] if labels.get(name) == service),
                settings.DIAGNOSIS["SERVICE_LABELS"][0],
            ),
        )

    @property
    def shown_name(self) -> str:
        return shown(self.alert_name)

    @property
    def shown_service(self) -> str:
        return shown(self.service)

    @property
    def label(self) -> str:
        return f"{self.shown_name}（{self.shown_service}）" if self.service else self.shown_name

    @property
    def where(self) -> str:
        """`instance=web-1:9100，job=node`: the identity labels, for questions and headings."""
        return "，".join(f'{name}="{shown(value)}"' for name, value in self.identity)


def shown(value: str) -> str:
    """A label value as reports and questions write it: cut past `SHOWN_VALUE_CHARS` (a 500 KB value
    made a report millions of pixels wide); the report's alert scope keeps it whole."""
    return value if len(value) <= SHOWN_VALUE_CHARS else value[: SHOWN_VALUE_CHARS - 1] + "…"


class ToolGap(BaseModel):
    """A tool call of the alert's session that failed or found nothing."""

    model_config = ConfigDict(extra="forbid")

    ref: AnswerRef
    failed: bool

    def line(self, refs: RefWriter) -> str:
        return f"{refs.ref(self.ref)} " + ("调用失败" if self.failed else "未检索到匹配证据")


class AlertAnalysis(BaseModel):
    """One analysed alert as the report shows it: verified material only."""

    model_config = ConfigDict(extra="forbid")

    subject: AlertSubject
    state: str
    session_id: str
    status: str
    output_type: str
    verdict: str
    groundedness_score: float | None
    findings: list[Statement] = []
    # Some finding observes something (not only "未检索到…": a no-hit never confirms an alert).
    confirmed: bool = False
    inferences: list[Statement] = []
    # The gatekeeper-passed excerpts with their refs, shown when nothing was concluded.
    verified_evidence: list[Quote] = []
    # What kept claims from being confirmed: citations that failed, then counts (or `FAILED_GAP`),
    # then the tool calls that failed or found nothing.
    failed_citations: list[FailedCitation] = []
    gaps: list[str] = []
    tool_gaps: list[ToolGap] = []
    actions: list[str] = []
    # Runbook blocks found for the alert (guidance, never current facts): their titles, the ref
    # naming the lookup and the document.
    runbooks: list[Quote] = []
    # Where the evidence came from: `演示数据` for the demo world.
    sources: list[str] = []
    # The alert's episodes as the report shows them: firing, or resolved with the time.
    state_text: str = FIRING
    # For an alert whose episodes all resolved: when it fired, resolved, and for how long; else "".
    resolved_text: str = ""
    # The alert's record as its session's alert query returned it (value, threshold, severity).
    record: dict = {}
    # Error-level log lines grouped by pattern: (example line, count), most frequent first.
    error_patterns: list[tuple[str, int]] = []
    runbook_steps: list[str] = []
    # The alert's flapping group: {"episodes", "since", "state"}, or None.
    flapping: dict | None = None
    # It fires by design (a dead man's switch, a watchdog): named as such, never ranked first.
    always_firing: bool = False

    @property
    def severity(self) -> str:
        return str(self.record.get("severity") or "").lower()

    @property
    def priority(self) -> tuple[bool, int, Decimal]:
        """As `priority` asks order alerts: severity, then how far past the threshold; an alert that
        fires by design after every other, whatever its severity."""
        rank = SEVERITY_RANK.get(self.severity, len(SEVERITY_RANK))
        reading = value_against_threshold(self.record)
        return self.always_firing, rank, -(reading[3] if reading else Decimal(0))

    @property
    def completed(self) -> bool:
        return self.status == DiagnosisSession.Status.COMPLETED

    @property
    def has_gaps(self) -> bool:
        return bool(self.failed_citations or self.gaps or self.tool_gaps)

    def summary(self) -> str:
        """One line for a notification: the outcome and, when there is one, the first verified finding
        (in the past once the alert resolved: the record stores it so)."""
        outcome = _output_type_text(self, RAW_REFS) if self.completed else FAILED_LABEL
        finding = " ".join(self.findings[0].text.split()) if self.findings else ""
        if self.resolved_text:
            lead = f"已恢复：{self.resolved_text}；触发期间的分析 {outcome}"
            return (f"{lead}：{finding}" if finding else lead)[:500]
        return (f"{outcome}：{finding}" if finding else outcome)[:500]

    def gap_lines(self, refs: RefWriter = RAW_REFS) -> list[str]:
        return [
            *(
                f"{refs.ref(failed.ref)} 的引用未通过核验（{failed.rule}）"
                for failed in self.failed_citations
            ),
            *self.gaps,
            *(gap.line(refs) for gap in self.tool_gaps),
        ]


def alert_question(subject: AlertSubject) -> str:
    """The narrow question a child session answers about its alert: its name, service and identity
    labels, so the analysis stays on this alert and not on any alert of the same name. The service is
    its label quoted (`service="…"`): the session takes the whole value as its subject, a known
    service only when it equals one, never one it merely contains."""
    service = f'{subject.service_label}="{quoted(subject.shown_service)}" ' if subject.service else ""
    where = f"（{subject.where}）" if subject.identity else ""
    return f"只确认 {service}是否存在 {subject.shown_name} 告警{where}，并给出相关证据"


def runbook_query(alert: dict) -> str:
    """The knowledge lookup for an alert's runbook: its `runbook_url`'s last path segment (a runbook
    folder selects the file of that name) and its alert name (a runbook's exact term)."""
    url = (alert.get("annotations") or {}).get("runbook_url") or ""
    segment = PurePosixPath(urlsplit(url.strip()).path).name
    stem = segment.rsplit(".", 1)[0] if "." in segment else segment
    return " ".join(dict.fromkeys(term for term in (stem, alert["alert_name"]) if term))[:200]


def alert_subjects(alerts: list[dict]) -> list[AlertSubject]:
    """The distinct firing subjects, in order: one child session each."""
    return list(dict.fromkeys(AlertSubject.of(a) for a in alerts if a["state"] == FIRING))


def alert_analysis_build(
    *,
    child: DiagnosisSession,
    invocations: list[ToolInvocation],
    runbook: ToolInvocation | None = None,
    logs: ToolInvocation | None = None,
    resolved: str = "",
    flapping: dict | None = None,
) -> AlertAnalysis:
    """What the report may say about one child session, taken from its verified records; `runbook` is
    the analysis's knowledge lookup for this alert, `logs` its query of the service's logs, `resolved`
    its `resolved_text` once it resolved."""
    alerts = child.alert_scope.get("alerts") or [{}]
    subject = AlertSubject.of({"alert_name": "", **alerts[0]})
    analysis = AlertAnalysis(
        subject=subject,
        state=alerts[0].get("state", FIRING),
        session_id=child.session_id,
        status=child.status,
        output_type=child.output_type,
        verdict=child.verdict,
        groundedness_score=child.groundedness_score,
        runbooks=runbook_lines(runbook),
        sources=_sources([*invocations, *([runbook] if runbook else [])]),
        resolved_text=resolved,
        flapping=flapping,
        record=_alert_record(subject, invocations)
        or {"severity": (alerts[0].get("labels") or {}).get("severity")},
        error_patterns=error_patterns([*invocations, *([logs] if logs else [])]),
        runbook_steps=runbook_steps(runbook),
    )
    analysis.always_firing = _fires_always(subject, analysis.record, alerts[0])
    recorded = None
    if analysis.completed:
        record = self_evaluation_of(session=child).get(VERIFIER_EVALUATION)
        recorded = composer_material_from_record(query=child.query, record=record)
        if recorded is None:
            logger.warning("AIOps child %s has no readable verifier record", child.session_id)
    if recorded is None:
        analysis.gaps = [FAILED_GAP]
        analysis.actions = _next_steps(analysis, allowed_actions=[])
        return analysis

    material = recorded.material
    if output_type_shows_claims(child.output_type):
        claims = {claim.claim_id: claim for claim in recorded.executor_output.claims}
        told = {
            claim_id: text
            for claim_id, claim in claims.items()
            if resolved and child.engine == RulesEngine.name and (text := _told_resolved(claim, invocations))
        }
        analysis.findings = [_in_tense(s, told) for s in recorded.findings]
        analysis.inferences = [_in_tense(s, told) for s in recorded.inferences]
    claim_types = {claim.claim_id: claim.claim_type for claim in recorded.executor_output.claims}
    analysis.confirmed = any(claim_types[f.claim_id] != "negative_observation" for f in analysis.findings)
    if not analysis.findings and not analysis.inferences:
        analysis.verified_evidence = verified_quotes(recorded.gatekeeper_result)
    degraded = degraded_of(verification=recorded.verification, gatekeeper_result=recorded.gatekeeper_result)
    analysis.failed_citations = degraded.failed
    analysis.gaps = degraded.counts
    analysis.tool_gaps = _tool_gaps(invocations)
    analysis.actions = _next_steps(analysis, allowed_actions=material.allowed_actions)
    return analysis


def _told_resolved(claim: Claim, invocations: list[ToolInvocation]) -> str:
    """A rules claim about an alert, written again after the alert resolved: in the past, from the
    alert record it cites (the rules engine writes an alert's observation citing its record first).
    "" for any other claim: a log line, a sample or a runbook block says what its source wrote."""
    first = claim.evidence_bindings[0] if claim.evidence_bindings else None
    if claim.claim_type != "observation" or first is None or not ALERTS.owns(first.tool_name):
        return ""
    output = next((i.output for i in invocations if i.pk == first.source_invocation_id), None)
    record = record_at(output, first.raw_path)
    return alert_observation(AlertRecord.model_validate(record), resolved=True) if record else ""


def _in_tense(statement: Statement, told: dict[str, str]) -> Statement:
    """The statement as the report tells it. A resolved alert's rules claims are written in the past
    from their records (`told`); a model's claims are free text, quoted as the model wrote them and
    never rewritten (a rewrite would put words in its mouth)."""
    if statement.claim_id not in told:
        return statement
    return statement.model_copy(update={"text": told[statement.claim_id]})


def report_output_type(analyses: list[AlertAnalysis]) -> str:
    """NORMAL when every alert's answer is; DEGRADED when none has a usable one; else the disclaimer."""
    types = [a.output_type if a.completed else OutputType.DEGRADED for a in analyses]
    if all(t == OutputType.NORMAL for t in types):
        return OutputType.NORMAL
    if all(t == OutputType.DEGRADED for t in types):
        return OutputType.DEGRADED
    return OutputType.LOW_CONFID_WITH_DISCLAIMER


class AiopsReport(BaseModel):
    """The `告警分析报告` as structure: its alerts most urgent first, each with what it may say; the
    Markdown is written from it by `report_markdown`, and the rule checks read its fields."""

    model_config = ConfigDict(extra="forbid")

    record_type: Literal["aiops_report"] = REPORT_RECORD_TYPE
    analyses: list[AlertAnalysis] = []
    scope_line: str = ""
    notes: list[str] = []
    # The labels of the firing alerts left unanalysed.
    not_analysed: list[str] = []
    # The related alerts of each incident under its one candidate list (§23), oldest incident first;
    # the standing alerts (firing for hours, a dead man's switch) apart, never leading one.
    incidents: list[IncidentFinding] = []
    standing: list[str] = []


def report_build(
    *,
    analyses: list[AlertAnalysis],
    scope_line: str,
    notes: list[str],
    not_analysed: list[str] = (),
    incidents: list[IncidentFinding] = (),
    standing: list[str] = (),
) -> AiopsReport:
    """The report's record: the alerts most urgent first (`priority_sorted`)."""
    return AiopsReport(
        analyses=priority_sorted(analyses),
        scope_line=scope_line,
        notes=notes,
        not_analysed=list(not_analysed),
        incidents=list(incidents),
        standing=list(standing),
    )


def report_record_of(stored: dict) -> AiopsReport | None:
    """A report session's stored record; None for a report stored before reports were kept as structure."""
    return AiopsReport.model_validate(stored) if stored.get("record_type") == REPORT_RECORD_TYPE else None


def stored_report_markdown(stored: dict, refs: RefWriter) -> str:
    """A stored report record written with `refs` (the page's): `diagnosis.presenters.answer`'s
    writer of this record type."""
    return report_markdown(AiopsReport.model_validate(stored), refs=refs)


def report_markdown(report: AiopsReport, *, refs: RefWriter = RAW_REFS) -> str:
    """The Chinese Markdown report: the overall status first, the alert table, one section per alert,
    the alerts left unanalysed, the summary. The session stores it with `RAW_REFS`; the page writes
    it with its own `refs`."""
    analyses = report.analyses
    lines = [
        f"# {REPORT_TITLE}",
        "",
        status_line(analyses, not_analysed_count=len(report.not_analysed)),
        "",
        report.scope_line,
    ]
    if report_output_type(analyses) != OutputType.NORMAL:
        lines += ["", MIXED_RESULTS_NOTE]
    lines += ["", "## 告警一览", ""]
    if analyses:
        lines += ["| # | 告警 | 服务 | 状态 | 校验结论 | 输出类型 |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {number} | {_cell(a.subject.shown_name)} | {_cell(a.subject.shown_service or '—')} | "
            f"{_cell(a.state_text)}{_always_cell(a)}{_flapping_cell(a)} | {_verdict_text(a)} | "
            f"{_output_type_text(a, refs)} |"
            for number, a in enumerate(analyses, start=1)
        ]
    else:
        lines.append("当前范围内没有处于 firing 状态的告警，无需分析。")
    if report.incidents:
        lines += ["", *_incidents_section(report)]
    for number, analysis in enumerate(analyses, start=1):
        lines += ["", *_alert_section(number, analysis, refs)]
    if report.not_analysed:
        lines += ["", "## 未分析的告警", "", *bullets([f"`{label}`" for label in report.not_analysed])]
    lines += ["", "## 总结", "", *_summary(analyses, report.notes, refs)]
    return "\n".join(lines).strip() + "\n"


def priority_sorted(analyses: list[AlertAnalysis]) -> list[AlertAnalysis]:
    """Most urgent first: critical > warning > info > none, then further past the threshold."""
    return sorted(analyses, key=lambda analysis: analysis.priority)


def value_against_threshold(record: dict) -> tuple[str, str, str, Decimal] | None:
    """(value, operator, threshold, how far past as a ratio) of an alert record: its rule's `expr`
    comparison (a PromQL parser) or its stated threshold; None without both numbers."""
    value = _number(record.get("value"))
    comparison = comparison_of(record.get("expr") or "")
    if comparison is not None:
        operator, threshold, threshold_text = (
            comparison.operator,
            finite_number(comparison.threshold),
            comparison.threshold_text,
        )
    else:
        operator, threshold = ">", _number(record.get("threshold"))
        threshold_text = str(record.get("threshold") or "")
    if value is None or threshold is None or threshold == 0:
        return None
    past = (value - threshold) if operator.startswith(">") else (threshold - value)
    return str(record.get("value")), operator, threshold_text, past / abs(threshold)


def value_line(record: dict) -> str:
    """`当前值 92%，阈值 > 80%（超出 15%）`, or "" without a value and a threshold."""
    reading = value_against_threshold(record)
    if reading is None:
        return ""
    value, operator, threshold, ratio = reading
    how_far = f"超出 {number_text(f'{ratio * 100:.0f}')}%" if ratio > 0 else "未超出"
    return f"当前值 {value}，阈值 {operator} {threshold}（{how_far}）"


def error_patterns(invocations: list[ToolInvocation]) -> list[tuple[str, int]]:
    """The error-level lines of the alert's log queries grouped by template (Drain3, as the answers'
    log slots): each pattern's newest line and its count."""
    messages: list[str] = []
    seen: set[tuple] = set()
    for invocation in invocations:
        if not LOGS.owns(invocation.tool_name) or not invocation.success:
            continue
        for record in invocation.output.get("logs") or []:
            if not is_error_level(str(record.get("level", ""))):
                continue
            line = (record.get("timestamp"), record.get("instance"), record.get("message"))
            if line in seen:  # the service's query and the session's may return the same line
                continue
            seen.add(line)
            messages.append(str(record.get("message", "")))
    patterns = patterns_mined(messages)[:MAX_ERROR_PATTERNS]
    return [(messages[pattern.members[0]], pattern.count) for pattern in patterns]


def runbook_steps(invocation: ToolInvocation | None) -> list[str]:
    """The steps of the alert's runbook: the section that holds them (排查 / 处置 / Diagnosis …), its
    lines as written; none when the lookup found no runbook of that name."""
    if invocation is None or not invocation.success:
        return []
    blocks = [b for b in invocation.output.get("evidence_blocks") or [] if b.get("retrieval_layer") == "L0"]
    # The section's own name, after the document's: "… 处置手册 · 处置措施".
    steps = [b for b in blocks if STEP_SECTIONS.search(str(b.get("title", "")).rpartition(" · ")[2])]
    for block in steps[:1]:
        lines = [line.strip() for line in str(block.get("content", "")).splitlines() if line.strip()]
        return [line for line in lines if not line.startswith("#")][:MAX_RUNBOOK_STEPS]
    return []


def _number(value) -> Decimal | None:
    match = NUMBER.search(str(value if value is not None else ""))
    return finite_number(match[0]) if match else None


def _fires_always(subject: AlertSubject, record: dict, scope_alert: dict) -> bool:
    """Whether the alert fires by design, read from its session's record and the alert as it came
    (its labels' severity, its annotations): used for its rank only, never quoted."""
    labels = scope_alert.get("labels") or {}
    parts = {
        "severity": labels.get("severity"),
        "annotations": scope_alert.get("annotations"),
        **record,
        "alert_name": subject.alert_name,
    }
    read = AlertRecord.model_validate({key: value for key, value in parts.items() if value is not None})
    return record_fires_always(read, current_vocabulary())


def _alert_record(subject: AlertSubject, invocations: list[ToolInvocation]) -> dict | None:
    """The subject's record in its session's alert query (same name, and service when it has one)."""
    for invocation in invocations:
        if not ALERTS.owns(invocation.tool_name) or not invocation.success:
            continue
        for record in invocation.output.get("alerts") or []:
            if record.get("alert_name") == subject.alert_name and (
                not subject.service or record.get("service") == subject.service
            ):
                return record
    return None


def alert_tally(analyses: list[AlertAnalysis]) -> Counter:
    """Alerts by outcome: `verified` (NORMAL), `gaps` (with disclaimer), `degraded` (or failed)."""
    return Counter(_outcome(a) for a in analyses)


def status_line(analyses: list[AlertAnalysis], *, not_analysed_count: int = 0) -> str:
    """The report's first line: how many alerts were verified, have gaps, were degraded."""
    return f"**总体状态**：{status_text(analyses, not_analysed_count=not_analysed_count)}"


def status_text(analyses: list[AlertAnalysis], *, not_analysed_count: int = 0) -> str:
    """`分析 3 条告警 — 1 条已核验，…。`: the status line's words, without markup (chat notices)."""
    tally = alert_tally(analyses)
    text = (
        f"分析 {len(analyses)} 条告警 — {tally['verified']} 条已核验，"
        f"{tally['gaps']} 条有证据缺口，{tally['degraded']} 条已降级"
    )
    if not_analysed_count:
        text += f"；另有 {not_analysed_count} 条未分析"
    return text + "。"


def resolved_text(alerts: list[dict]) -> str:
    """`触发于 …，恢复于 …，持续 …` when every one of the alerts resolved; "" while any fires."""
    if not alerts or any(alert.get("state") != RESOLVED for alert in alerts):
        return ""
    starts = sorted(datetime.fromisoformat(a["starts_at"]) for a in alerts if a.get("starts_at"))
    ends = sorted(datetime.fromisoformat(a["ends_at"]) for a in alerts if a.get("ends_at"))
    parts = []
    if starts:
        parts.append(f"触发于 {_local(starts[0])}")
    if ends:
        parts.append(f"恢复于 {_local(ends[-1])}")
    if starts and ends and ends[-1] >= starts[0]:
        parts.append(f"持续 {duration_words(int((ends[-1] - starts[0]).total_seconds()))}")
    return "，".join(parts) or "已恢复"


def flapping_text(group: dict) -> str:
    """`自 … 起反复触发 5 次，仍在反复` / `… 已平息`: a flapping group's count and state."""
    since = _local(datetime.fromisoformat(group["since"]))
    state = "已平息" if group.get("state") == "settled" else "仍在反复"
    return f"自 {since} 起反复触发 {group['episodes']} 次，{state}"


def duration_words(seconds: int) -> str:
    """`1 小时 5 分`, `5 分 30 秒`, `45 秒`: how long an episode lasted, in words."""
    hours, rest = divmod(max(seconds, 0), 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} 小时 {minutes} 分" if minutes else f"{hours} 小时"
    if minutes:
        return f"{minutes} 分 {seconds} 秒" if seconds else f"{minutes} 分"
    return f"{seconds} 秒"


def _local(moment: datetime) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M:%S}"


def _outcome(analysis: AlertAnalysis) -> str:
    if not analysis.completed or analysis.output_type == OutputType.DEGRADED:
        return "degraded"
    return "verified" if analysis.output_type == OutputType.NORMAL else "gaps"


def runbook_lines(invocation: ToolInvocation | None) -> list[Quote]:
    """The runbook blocks an alert's knowledge lookup found by name (L0), quoted with their source."""
    if invocation is None or not invocation.success:
        return []
    documents = {
        block["source_document"]: block["title"].split(" · ")[0]
        for block in invocation.output.get("evidence_blocks") or []
        if block.get("retrieval_layer") == "L0"
    }
    return [
        Quote(
            excerpt=title,
            ref=AnswerRef(tool_name=invocation.tool_name, invocation_id=invocation.pk, raw_path=document),
        )
        for document, title in documents.items()
    ]


def _incidents_section(report: AiopsReport) -> list[str]:
    """Each incident's alerts under its one candidate line (an inference, never a verified cause)."""
    lines = ["## 事件与根因候选（推断，未证实）", ""]
    for number, incident in enumerate(report.incidents, start=1):
        alerts = "、".join(f"`{shown(label)}`" for label in incident.alerts)
        lines.append(f"{number}. {incident.onset} 起，告警 {alerts}：{incident.conclusion}")
    if report.standing:
        standing = "、".join(f"`{shown(label)}`" for label in report.standing)
        lines += ["", f"持续触发的告警（不参与根因排序）：{standing}"]
    return lines


def _alert_section(number: int, analysis: AlertAnalysis, refs: RefWriter) -> list[str]:
    subject = analysis.subject
    heading = f"## {number}. {subject.shown_name}" + (
        f" · {subject.shown_service}" if subject.service else ""
    )
    lines = [
        heading,
        "",
        f"校验结论：{_verdict_text(analysis)}｜输出类型：{_output_type_text(analysis, refs)}｜"
        f"状态：{analysis.state_text}{_always_cell(analysis)}｜子会话：`{analysis.session_id}`",
    ]
    if analysis.flapping:
        lines += ["", f"**反复触发**：{flapping_text(analysis.flapping)}。"]
    if analysis.resolved_text:
        lines += ["", f"**已恢复**：{analysis.resolved_text}。以下是告警触发期间的分析，不是当前状态。"]
    if subject.identity:
        lines += [
            "",
            "告警标签：" + "，".join(f"`{name}={shown(value)}`" for name, value in subject.identity),
        ]
    if analysis.sources:
        lines += ["", "证据来源：" + "、".join(analysis.sources)]
    reading = value_line(analysis.record)
    if reading or analysis.severity:
        severity = f"级别 {analysis.severity}" if analysis.severity else ""
        lines += ["", "**数值**：" + "；".join(part for part in (severity, reading) if part)]
    if analysis.output_type == OutputType.LOW_CONFID_WITH_DISCLAIMER:
        lines += ["", DISCLAIMER]
    elif analysis.output_type == OutputType.DEGRADED:
        lines += ["", DEGRADED_HEADER]
    if analysis.findings:
        heading = "**触发期间已核验的发现**" if analysis.resolved_text else "**已核验的发现**"
        lines += ["", heading, *statement_lines(analysis.findings, refs)]
    if analysis.inferences:
        lines += ["", INFERENCES_HEADING, *statement_lines(analysis.inferences, refs)]
    if analysis.verified_evidence:
        verified = [
            evidence_quote(excerpt=quote.excerpt or QUOTE_ONLY, source=refs.ref(quote.ref))
            for quote in analysis.verified_evidence
        ]
        lines += ["", "**已通过引用核验的证据**（未形成结论）", *bullets(verified)]
    if analysis.completed and not (analysis.findings or analysis.inferences or analysis.verified_evidence):
        lines += ["", "**已核验的发现**", *bullets([NO_CONCLUSION])]
    if analysis.error_patterns:
        lines += [
            "",
            "**错误级别日志**（按模式归并）",
            *bullets([f"{count} 条：「{example}」" for example, count in analysis.error_patterns]),
        ]
    if analysis.runbooks:
        runbooks = [f"「{quote.excerpt}」（来源：{refs.ref(quote.ref)}）" for quote in analysis.runbooks]
        lines += ["", "**处理手册**（排查参考，不是当前事实）", *bullets(runbooks)]
    if analysis.runbook_steps:
        lines += ["", "**手册步骤**", *(f"> {step}" for step in analysis.runbook_steps)]
    lines += ["", "**证据缺口**", *bullets(analysis.gap_lines(refs) or ["暂无"])]
    lines += ["", ACTIONS_HEADING, *bullets(analysis.actions)]
    return lines


def _summary(analyses: list[AlertAnalysis], notes: list[str], refs: RefWriter) -> list[str]:
    lines = []
    if analyses:
        counts = Counter(_output_type_text(a, refs) if a.completed else FAILED_LABEL for a in analyses)
        kinds = [*map(refs.output_type, OUTPUT_TYPE_LABELS), FAILED_LABEL]
        parts = [f"{counts[kind]} 条{kind}" for kind in kinds if counts[kind]]
        # "；" between the parts: a label may hold a "，" itself (已降级，需人工).
        lines.append(f"- 共分析 {len(analyses)} 条 firing 告警：" + "；".join(parts) + "。")
        confirmed = [a.subject.label for a in analyses if a.confirmed]
        if confirmed:
            lines.append("- 有已核验证据支撑的告警：" + "、".join(confirmed) + "。")
        not_found = [a.subject.label for a in analyses if a.findings and not a.confirmed]
        if not_found:
            lines.append("- 只得到“未检索到匹配证据”的告警（不等于已排除）：" + "、".join(not_found) + "。")
        attention = [
            a.subject.label for a in analyses if a.output_type != OutputType.NORMAL or not a.completed
        ]
        if attention:
            lines.append("- 需要人工复核：" + "、".join(attention) + "（见各自的证据缺口与取证动作）。")
    lines += [f"- {note}" for note in notes]
    lines.append("- 本报告只包含通过引用核验与校验的材料；告警注释等未经核验的输入不作为结论。")
    return lines


def _sources(invocations: list[ToolInvocation]) -> list[str]:
    labels = (
        DEMO_LABEL
        if invocation.is_demo
        else "`" + " ".join(part for part in (invocation.source, invocation.source_location) if part) + "`"
        for invocation in invocations
        if invocation.source
    )
    return list(dict.fromkeys(labels))


def _tool_gaps(invocations: list[ToolInvocation]) -> list[ToolGap]:
    return [
        ToolGap(
            ref=AnswerRef(tool_name=invocation.tool_name, invocation_id=invocation.pk),
            failed=not invocation.success,
        )
        for invocation in invocations
        if not invocation.success or invocation.evidence_status == NO_EVIDENCE
    ]


def _next_steps(analysis: AlertAnalysis, *, allowed_actions: list[str]) -> list[str]:
    """Evidence gathering only, never a fix: the verified material's actions, then standard checks."""
    subject = analysis.subject
    where = f" {subject.shown_service} 上" if subject.service else ""
    watch = (
        f"复盘{where} {subject.shown_name} 告警触发期间的指标与日志，留意它是否再次触发。"
        if analysis.resolved_text
        else f"持续查询{where} {subject.shown_name} 告警的状态与持续时长，确认其是否仍在触发。"
    )
    # The runbook lookup already ran: asking for it again adds nothing once it found one.
    lookup = (
        [] if analysis.runbooks else [f"为 {subject.shown_name} 补一份处理手册（本次未检索到同名手册）。"]
    )
    steps = [*allowed_actions, *lookup, watch]
    if analysis.has_gaps:
        steps.append("针对上述证据缺口补充检索后，重新发起告警分析。")
    if analysis.output_type != OutputType.NORMAL or not analysis.completed:
        steps.append(f"人工复核子会话 `{analysis.session_id}` 的工具调用记录与证据引用。")
    return list(dict.fromkeys(steps))


def _verdict_text(analysis: AlertAnalysis) -> str:
    if not analysis.completed:
        return "执行失败"
    if analysis.groundedness_score is None:
        return analysis.verdict or "—"
    return f"{analysis.verdict}（支撑度 {analysis.groundedness_score:.2f}）"


def _output_type_text(analysis: AlertAnalysis, refs: RefWriter) -> str:
    """`已核验（NORMAL）` in the stored Markdown, `已核验` on the page (`refs.output_type`)."""
    return refs.output_type(analysis.output_type) if analysis.completed and analysis.output_type else "—"


def _always_cell(analysis: AlertAnalysis) -> str:
    return f"（{ALWAYS_FIRING}）" if analysis.always_firing else ""


def _flapping_cell(analysis: AlertAnalysis) -> str:
    return f" · 反复触发 {analysis.flapping['episodes']} 次" if analysis.flapping else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
