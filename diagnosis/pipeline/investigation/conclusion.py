"""An investigation's conclusion as §23 writes it, with what it cites:

    根因候选：<subject>（<mechanism>，<onset>起，<before> → <after>）；其次：<subject>（…）；…

at most three candidates, each citing the range series its numbers are computed from (and the
call-graph series naming the caller it is seen from); the numbers and the onset are derived numbers
the gatekeeper computes again. Or, when nothing moved: 未找到根因证据：<what was searched>.
A candidate is an inference, never a verified cause: the words say 候选.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from diagnosis.pipeline.contracts import EvidenceBinding, RankedCandidate
from diagnosis.pipeline.investigation.calls import calls_said, operation_of
from diagnosis.pipeline.investigation.investigate import Cited, Investigation
from diagnosis.pipeline.investigation.logs import LOG_PATTERN, PATTERN_LABEL
from diagnosis.pipeline.investigation.paths import step_said
from diagnosis.pipeline.investigation.ranking import CALLER_SIDE, OPERATIONS, Candidate, Moved
from diagnosis.pipeline.investigation.said import time_said, value_said
from diagnosis.pipeline.slot import DerivedNumber, TimelineMark
from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_paths.record import TracePathsRecord

MAX_CANDIDATES = 3
FIRST = "根因候选："
THEN = "；其次："
NOT_FOUND = "未找到根因证据："
# A line pattern is named by its head in a mechanism (its whole text is in the cited series).
PATTERN_SHOWN = 60


@dataclass
class Said:
    """A text with what it cites: its bindings, and the numbers in it computed from them."""

    text: str
    bindings: list[EvidenceBinding] = field(default_factory=list)
    derived: list[DerivedNumber] = field(default_factory=list)
    # When what it says began (a candidate's or a change's onset).
    onset: datetime | None = None
    # What the timeline chart draws of it.
    marks: list[TimelineMark] = field(default_factory=list)
    # The candidates (or changes) it names, in its order, as the llm engine is given them.
    candidates: list[RankedCandidate] = field(default_factory=list)


def candidate_parts(investigation: Investigation, *, limit: int = MAX_CANDIDATES) -> list[Said]:
    """`<subject>（<mechanism>，<onset>起，<before> → <after>）` of each ranked candidate, at most `limit`."""
    return [_candidate_said(c, investigation) for c in investigation.candidates[:limit]]


def joined(parts: list[Said], *, lead: str, then: str = THEN) -> Said:
    """The parts in one text (`lead` first part `then` the others), citing what each cites."""
    first, rest = parts[0], parts[1:]
    said = Said(text=lead + first.text + (then + "；".join(part.text for part in rest) if rest else ""))
    for part in parts:
        known = {(b.source_invocation_id, b.raw_path) for b in said.bindings}
        said.bindings += [b for b in part.bindings if (b.source_invocation_id, b.raw_path) not in known]
        said.derived += part.derived
        said.marks += part.marks
        said.candidates += part.candidates
    return said


def candidates_said(investigation: Investigation) -> Said:
    """The ranked candidates (at most three) in §23's words, with their bindings and derived numbers."""
    return joined(candidate_parts(investigation), lead=FIRST)


def searched_said(investigation: Investigation, *, searched: str = "") -> str:
    """What was searched, for `未找到根因证据：…`; `searched`: what else was (alerts, lines)."""
    plan = investigation.plan
    roles = "、".join(dict.fromkeys(signal.label for signal in plan.signals))
    if not plan.signals:
        metrics = "指标源没有可读出服务关键信号（请求、错误、延迟、CPU、内存、网络）的指标"
    else:
        window = plan.window
        minutes = int((window.start - window.baseline_start).total_seconds() // 60)
        metrics = (
            f"已读取 {investigation.series_read} 条序列（{roles}），{time_said(window.start)} 起"
            f"与之前 {minutes} 分钟相比没有服务的关键信号明显变化"
        )
    unread = plan.left_out + plan.patterns_left_out
    bound = f"另有 {unread} 项（指标族或服务的日志模式）超出查询上限未读取" if unread else ""
    return NOT_FOUND + "；".join(part for part in (metrics, searched, bound) if part)


def _candidate_said(candidate: Candidate, investigation: Investigation) -> Said:
    lead = candidate.lead
    cited: Cited = lead.ref
    signal = cited.signal
    change = lead.change
    before, after = value_said(change.before, signal.unit), value_said(change.after, signal.unit)
    onset = time_said(change.onset)
    stopped_calling = lead in candidate.stopped_calling
    mechanism = _mechanism(lead, signal.label, stopped_calling=stopped_calling)
    text = f"{candidate.subject}（{mechanism}，{onset}起，{before} → {after}）"
    binding = EvidenceBinding.of_ref(cited.result, cited.ref)
    bindings = [binding]
    if lead.role == CALLER_SIDE or stopped_calling:
        # The lead's series names one end (a caller's own latency, a callee's traffic); the graph's
        # edge between them names both.
        pair = (
            (lead.service, candidate.subject)
            if lead.role == CALLER_SIDE
            else (candidate.subject, lead.service)
        )
        edge = investigation.edges.get(pair)
        if edge is not None:
            bindings.append(EvidenceBinding.of_ref(edge.result, edge.ref))
    elif lead.caller and signal.address and candidate.subject in investigation.targets:
        # A probe's series names the address; the subject's own target series names both.
        target = investigation.targets[candidate.subject]
        bindings.append(EvidenceBinding.of_ref(target.result, target.ref))
    calls = cited.calls
    # A series' level is its median over a window; an operation's calls, the share of its spans.
    levels = {
        "binding": binding,
        "statistic": "median" if calls is None else "call_share",
        "unit": signal.unit,
        "calls": list(calls.calls) if calls is not None else [],
        "given": calls.given if calls is not None else "",
    }
    derived = [
        DerivedNumber(start=change.level_start, end=change.baseline_end, said=before, **levels),
        DerivedNumber(start=change.onset, end=change.end, closed=True, said=after, **levels),
        DerivedNumber(
            binding=binding, statistic="sample_time", start=change.onset, end=change.onset, said=onset
        ),
    ]
    mark = TimelineMark(
        label=text, onset=change.onset, bindings=[binding], calls=levels["calls"], given=levels["given"]
    )
    stated = RankedCandidate(
        subject=candidate.subject,
        mechanism=mechanism,
        onset=onset,
        before=before,
        after=after,
        bindings=bindings,
    )
    return Said(
        text=text, bindings=bindings, derived=derived, onset=change.onset, marks=[mark], candidates=[stated]
    )


def _mechanism(move: Moved, label: str, *, stopped_calling: bool = False) -> str:
    if stopped_calling:
        # The callee's own traffic series: the calls the candidate no longer makes.
        return f"不再调用 {move.service}：其{label}下降"
    if move.role == LOG_PATTERN:
        pattern = _shown(str(move.ref.record.metric.get(PATTERN_LABEL, "")))
        return f"{label}「{pattern}」{'出现' if move.change.rising else '消失'}"
    direction = "升高" if move.change.rising else "下降"
    calls, record = move.ref.calls, move.ref.record
    if calls is not None and isinstance(record, TraceCallsRecord):
        operation = f"{record.service}「{_shown(record.operation)}」"
        called = calls_said(calls.calls, caller=record.service)
        if calls.given:
            # Said of the callee that answered before the calls vanished.
            given = _shown(operation_of(calls.given))
            return f"{operation}调用它（{given}）后再{label} {called} 的占比{direction}"
        return f"{operation}{label} {called} 的占比{direction}"
    if calls is not None and isinstance(record, TracePathsRecord):
        step = step_said(f"{record.service} {_shown(record.step)}", service=move.service)
        return f"{step}之后接{step_said(_shown_step(calls.calls[0]), service=move.service)}的占比{direction}"
    if move.role == OPERATIONS:
        operation = _shown(str(move.ref.record.metric.get(move.ref.signal.operation, "")))
        return f"{label}「{operation}」占比{direction}"
    if move.role == CALLER_SIDE:
        return f"调用方 {move.service} 的{label}{direction}"
    if move.caller:
        # An edge's or a probe's series: seen from the caller or the prober.
        return f"{move.caller} 看到的{label}{direction}"
    return f"{label}{direction}"


def _shown_step(step: str) -> str:
    """A next step (`<service> <step>`) with its step's head."""
    owner, _, name = step.partition(" ")
    return f"{owner} {_shown(name)}"


def _shown(name: str) -> str:
    """A pattern's or an operation's name as a mechanism quotes it: its head."""
    return name if len(name) <= PATTERN_SHOWN else f"{name[:PATTERN_SHOWN]}…"
