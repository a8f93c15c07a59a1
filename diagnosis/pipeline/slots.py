"""Slots: what the answer to each ask must contain, filled by code from recorded tool
output only, and the one `结论` line per ask written from it.

`slot_calls.slot_calls_run` makes the calls the asks need (whichever engine runs: the executor starts
from their results), `slots_read` reads each ask's slot from those recorded messages with the evidence ref it
rests on, and `slots_verified` keeps a slot filled only when the gatekeeper verifies every citation
of it against the session's recorded invocations. Pure code over plain data.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from difflib import SequenceMatcher

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.asks import Ask
from diagnosis.pipeline.contracts import (
    NO_EVIDENCE_PATH,
    Claim,
    EvidenceBinding,
    RecordedInvocation,
    record_path,
)
from diagnosis.pipeline.facts import NO_NAMES, FactNames
from diagnosis.pipeline.gatekeeper import claims_checked
from diagnosis.pipeline.injected_commands import QUOTE_ONLY, instructions_in
from tools.loglines import Pattern, evidence_record, has_property, patterns_mined
from tools.numbers import finite_number, number_text, places_text, series_name
from tools.promql import Carrier, comparison_of
from tools.terms import groups_in, name_parts, term_pattern
from tools.vocabulary import Vocabulary

# query_promql's own bound on a range.
MAX_RANGE_MINUTES = 7 * 24 * 60
MAX_LISTED = 8
MAX_PATTERNS = 3
# Episodes in the window from which an alert is flapping.
FLAPPING_EPISODES = 3
CONCLUSION = "结论："
# Severity order of `list` / `priority`: critical > warning > info > none.
SEVERITY_RANK = {"critical": 0, "error": 1, "warning": 2, "info": 3}
QUOTED = re.compile(r"「[^」]*」")
# The sections that hold a runbook's steps, in the order a runbook ask quotes them (vocabulary intents).
STEP_INTENTS = ("mitigation", "investigation")
RUNBOOK_FILE = re.compile(r"\.(?:md|markdown)$", re.IGNORECASE)
# Asks whose answer is reasoning over the evidence, which code only hedges: left open to the executor.
REASONED_KINDS = ("cause",)
# A claim restating a conclusion line: at least this share of it once plain, within it or this similar.
RESTATED_SHARE = 0.5
RESTATED_RATIO = 0.85
PUNCTUATION = re.compile(r"[\s\W_]+")
READ_ONLY = "本助手只读取告警、指标、日志与处理手册，不能执行「{word}」等操作"


class Slot(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ask: Ask
    filled: bool
    # The `结论` line without its prefix, written by code from the evidence it cites.
    conclusion: str = ""
    # Why the slot is not filled: no data, beyond the window, no runbook, a source failed.
    why: str = ""
    # What the sources cannot show, said as such (a window beyond retention, an action).
    limits: list[str] = []
    bindings: list[EvidenceBinding] = []

    def line(self) -> str:
        limits = "；".join(self.limits)
        return f"{CONCLUSION}{self.conclusion}" + (f"（{limits}）" if limits else "")

    def gap(self) -> str:
        return f"未能回答：{self.ask.label()} — {self.why}"


def conclusion_lines(slots: Sequence[Slot]) -> list[str]:
    return [slot.line() for slot in slots if slot.filled]


def open_asks(slots: Sequence[Slot]) -> list[str]:
    """The asks code's slots do not settle: unfilled, or asking for reasoning (code's own inference on
    a cause is only a hedged pairing of its symptoms)."""
    return [slot.ask.label() for slot in slots if not slot.filled or slot.ask.kind in REASONED_KINDS]


def restated_conclusion(text: str, slots: Sequence[Slot]) -> str:
    """The `结论` line of a filled slot that `text` restates, or "": a copy of most of the line (within it,
    or nearly the same text), never longer than it (a longer claim says something more)."""
    said = _plain(text)
    for slot in slots:
        line = _plain(slot.line()) if slot.filled else ""
        if not line or not len(line) * RESTATED_SHARE <= len(said) <= len(line):
            continue
        if said in line or SequenceMatcher(None, said, line).ratio() >= RESTATED_RATIO:
            return slot.line()
    return ""


def _plain(text: str) -> str:
    """The text without its `结论：` prefix, spaces and punctuation, lower-cased: how a copy is compared."""
    return PUNCTUATION.sub("", text.removeprefix(CONCLUSION)).lower()


def coverage_gaps(slots: Sequence[Slot]) -> list[str]:
    return [slot.gap() for slot in slots if not slot.filled]


@dataclass(frozen=True)
class SlotWorld:
    """What slot code reads besides the messages: the vocabulary, the labels naming a service, the
    tools the sources answer, the time and the log source's window."""

    vocabulary: Vocabulary
    service_labels: tuple[str, ...]
    tools: frozenset[str]
    now: datetime
    logs_window_minutes: int
    carrier: Carrier | None = None


def alert_arguments(ask: Ask) -> dict:
    if ask.subject_kind == "alert":
        return {"alert_name": ask.subject} | ({"service": ask.service} if ask.service else {})
    return {"service": ask.subject} if ask.subject_kind == "service" and ask.subject else {}


# --- Reading each slot -------------------------------------------------------------------------


def slots_read(asks: Sequence[Ask], *, messages: Sequence[dict], world: SlotWorld) -> list[Slot]:
    return [_READERS[ask.kind](ask, messages, world) for ask in asks]


def slots_verified(
    slots: Sequence[Slot], *, invocations: Sequence[RecordedInvocation], names: FactNames = NO_NAMES
) -> list[Slot]:
    """A filled slot stays filled only when the gatekeeper verifies every citation it rests on."""
    claims = [
        # Quoted log patterns are evidence, not the conclusion's own polarity.
        Claim(
            claim_id=f"slot-{i}",
            claim_type="observation",
            claim_text=QUOTED.sub("「」", s.conclusion),
            evidence_bindings=s.bindings,
        )
        for i, s in enumerate(slots)
        if s.filled and s.bindings
    ]
    result = claims_checked(claims, invocations=invocations, names=names)
    failed = {b.claim_id for b in result.checked_bindings if b.status == "fail"}
    return [
        s.model_copy(update={"filled": False, "why": "引用未通过核验"}) if f"slot-{i}" in failed else s
        for i, s in enumerate(slots)
    ]


@dataclass(frozen=True)
class _Found:
    """One record of a recorded message and the evidence ref that cites it."""

    message: dict
    record: dict
    ref: dict

    @property
    def binding(self) -> EvidenceBinding:
        return EvidenceBinding.of_ref(self.message, self.ref)


def _found(message: dict, key: str) -> list[_Found]:
    records = (message.get("output") or {}).get(key) or [] if message.get("success") else []
    refs = {ref["raw_path"]: ref for ref in message.get("evidence_refs") or []}
    return [
        _Found(message, record, refs[path])
        for index, record in enumerate(records)
        if (path := record_path(key, index)) in refs
    ]


def _messages(
    messages: Sequence[dict], tool: str, match: Callable[[dict], bool] = lambda _: True
) -> list[dict]:
    return [m for m in messages if m["tool_name"] == tool and match(m.get("arguments") or {})]


def alerts_of(ask: Ask, messages: Sequence[dict]) -> list[dict]:
    arguments = alert_arguments(ask)
    return [
        f.record
        for m in _messages(messages, "query_metrics", lambda a: a == arguments)
        for f in _found(m, "alerts")
    ]


def _alert_found(ask: Ask, messages: Sequence[dict]) -> tuple[list[_Found], dict | None]:
    """The alerts the ask is about and the message that found them: the ask's own call, else any
    alert query's records about the subject (None when no alert query was made)."""
    arguments = alert_arguments(ask)
    calls = _messages(messages, "query_metrics")
    exact = [m for m in calls if _arguments(m) == arguments]
    message = next(iter(exact or calls), None)
    if message is None:
        return [], None
    found = _found(message, "alerts")
    return (found if exact else [f for f in found if _about(f.record, ask)]), message


def _about(record: dict, ask: Ask) -> bool:
    if ask.subject_kind == "alert":
        return record.get("alert_name") == ask.subject and (
            not ask.service or record.get("service") == ask.service
        )
    if ask.subject_kind == "service" and ask.subject:
        return record.get("service") == ask.subject
    return True


def _unfilled(ask: Ask, why: str, *, limits: Sequence[str] = ()) -> Slot:
    return Slot(ask=ask, filled=False, why=why, limits=list(limits))


def _failure(message: dict | None, ask: Ask, missing: str) -> Slot:
    if message is None:
        return _unfilled(ask, missing)
    if not message.get("success"):
        return _unfilled(ask, f"数据源 {message.get('source') or message['tool_name']} 调用失败")
    return _unfilled(ask, missing)


def _no_hit(message: dict) -> EvidenceBinding | None:
    ref = next((r for r in message.get("evidence_refs") or [] if r["raw_path"] == NO_EVIDENCE_PATH), None)
    return EvidenceBinding.of_ref(message, ref) if ref else None


def _existence(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    found, message = _alert_found(ask, messages)
    if message is None or not message.get("success"):
        return _failure(message, ask, "未能查询告警状态")
    source = _source(message)
    if not found:
        no_hit = _no_hit(message)
        on = f"（{ask.service}）" if ask.service else ""
        return Slot(
            ask=ask,
            filled=no_hit is not None,
            conclusion=f"否，未发现 {ask.subject} 告警{on} · 来源 {source}",
            bindings=[no_hit] if no_hit else [],
            why="" if no_hit else "未能查询告警状态",
        )
    parts = [f"{_alert_text(f.record)}" for f in found[:MAX_LISTED]]
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"是，{'；'.join(parts)} · 来源 {source}",
        bindings=[f.binding for f in found[:MAX_LISTED]],
    )


def _value(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    series = _series_found(ask, messages)
    if series is not None:
        found, message = series
        if not found:
            return _failure(message, ask, f"查询 {_arguments(message).get('query', '')} 没有数据")
        alerts = _alert_found(ask, messages)[0]
        query = _arguments(message).get("query", "")
        lines = [_sample_text(f.record) + _against(f.record, alerts, query=query) for f in found[:MAX_LISTED]]
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{'；'.join(lines)} · 来源 {_source(message)}",
            bindings=[f.binding for f in found[:MAX_LISTED]],
        )
    # No Prometheus to ask: the alert's own current value, as its source records it; the value of a
    # topic is an alert of that topic's ("内存是多少" is not answered by a crash-loop count).
    alerts, message = _alert_found(ask, messages)
    valued = [
        f
        for f in _on_topic_found(alerts, ask, world.vocabulary, or_all=False)
        if f.record.get("value") not in (None, "")
    ]
    if not valued:
        return _failure(message, ask, "没有可查询的指标序列（需要 Prometheus 数据源，或告警记录自带当前值）")
    return Slot(
        ask=ask,
        filled=True,
        conclusion="；".join(
            f"{f.record['service']} 的 {f.record['alert_name']} 当前值 {number_text(str(f.record['value']))}"
            + (f"（阈值 {f.record['threshold']}）" if f.record.get("threshold") else "")
            for f in valued[:MAX_LISTED]
        )
        + f" · 来源 {_source(message)}",
        bindings=[f.binding for f in valued[:MAX_LISTED]],
    )


def _trend(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    series = _series_found(ask, messages)
    if series is None:
        return _unfilled(ask, "趋势需要 Prometheus 数据源（未配置），或没有可查询的指标序列")
    found, message = series
    ranged = [f for f in found if _numbers(f.record)]
    if not ranged:
        return _failure(
            message, ask, f"{ask.window.label}内查询 {_arguments(message).get('query', '')} 没有数据"
        )
    lines = []
    for f in ranged[:MAX_LISTED]:
        numbers = _numbers(f.record)
        lines.append(
            f"{series_name(f.record.get('metric') or {})} {ask.window.label}：起 {_n(numbers[0])}，末 {_n(numbers[-1])}，"
            f"最小 {_n(min(numbers))}，最大 {_n(max(numbers))}（{len(numbers)} 个采样）"
        )
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{'；'.join(lines)} · 来源 {_source(message)}",
        limits=_retention_limits(ask, message),
        bindings=[f.binding for f in ranged[:MAX_LISTED]],
    )


def _threshold(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    alerts, message = _alert_found(ask, messages)
    lines, bindings = [], []
    for f in _on_topic_found(alerts, ask, world.vocabulary)[:MAX_LISTED]:
        record = f.record
        comparison = comparison_of(record.get("expr") or "")
        if comparison:
            text = f"{record['alert_name']} 的阈值：{comparison.series} {comparison.operator} {comparison.threshold_text}（告警规则 expr）"
            text += _past(record.get("value"), comparison.operator, comparison.threshold)
        elif record.get("threshold"):
            text = f"{record['alert_name']} 的阈值 {record['threshold']}"
            if record.get("value") not in (None, ""):
                text += f"，当前值 {number_text(str(record['value']))}"
        else:
            continue
        lines.append(text)
        bindings.append(f.binding)
    if not lines:
        return _failure(message, ask, "告警记录没有规则表达式或阈值" if alerts else "没有找到所问的告警")
    return Slot(
        ask=ask, filled=True, conclusion=f"{'；'.join(lines)} · 来源 {_source(message)}", bindings=bindings
    )


def _history(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    message = next(
        iter(_messages(messages, "query_promql", lambda a: "ALERTS_FOR_STATE" in a.get("query", ""))), None
    )
    if message is None:
        return _unfilled(ask, "告警历史需要 Prometheus 数据源（未配置），只能看到当前告警")
    if not message.get("success"):
        return _failure(message, ask, "")
    # changes(ALERTS_FOR_STATE[w]) + 1 per alert series: its episodes in the window.
    episodes: Counter[str] = Counter()
    cited: list[_Found] = []
    for f in _found(message, "series"):
        changes = _decimal(_sample(f.record)[1])
        if changes is not None:
            episodes[(f.record.get("metric") or {}).get("alertname", "")] += int(changes) + 1
            cited.append(f)
    # The episodes Prometheus still holds: a window beyond its retention is counted for the part it keeps.
    limits = _retention_limits(ask, message)
    about = ask.subject or "所有告警"
    if not episodes:
        no_hit = _no_hit(message)
        return Slot(
            ask=ask,
            filled=no_hit is not None,
            conclusion=f"{ask.window.label}未见 {about} 的告警触发记录 · 来源 {_source(message)}",
            limits=limits,
            bindings=[no_hit] if no_hit else [],
            why="" if no_hit else "告警历史查询没有可引用的结果",
        )
    lines = [
        f"{alert} 触发 {count} 次" + ("，反复触发（flapping）" if count >= FLAPPING_EPISODES else "")
        for alert, count in episodes.most_common(MAX_LISTED)
    ]
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{ask.window.label} {about}：{'；'.join(lines)} · 来源 {_source(message)}",
        limits=limits,
        bindings=[f.binding for f in cited[:MAX_LISTED]],
    )


def _listing(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    found, message = _alert_found(ask, messages)
    if message is None or not message.get("success"):
        return _failure(message, ask, "未能查询告警状态")
    firing = sorted((f for f in found if f.record.get("state") == "firing"), key=_priority)
    if not firing:
        no_hit = _no_hit(message) or (found[0].binding if found else None)
        about = f"{ask.subject} " if ask.subject else ""
        return Slot(
            ask=ask,
            filled=no_hit is not None,
            conclusion=f"未发现 {about}处于 firing 状态的告警 · 来源 {_source(message)}",
            bindings=[no_hit] if no_hit else [],
            why="" if no_hit else "告警查询没有可引用的结果",
        )
    shown = firing[:MAX_LISTED]
    ranked = "；".join(f"{i}. {_alert_text(f.record)}" for i, f in enumerate(shown, 1))
    if ask.kind == "priority":
        first, *rest = shown
        text = f"最需要先处理：{_alert_text(first.record)}"
        text += f"；其后：{'；'.join(_alert_text(f.record) for f in rest)}" if rest else ""
    else:
        text = f"当前 {len(firing)} 个 firing 告警（按优先级）：{ranked}"
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{text} · 来源 {_source(message)}",
        bindings=[f.binding for f in shown],
    )


def _health(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    message = next(iter(_messages(messages, "query_targets")), None)
    if message is None:
        return _unfilled(ask, "抓取目标的健康状况需要 Prometheus 数据源（未配置）")
    found = _found(message, "targets")
    if not found:
        return _failure(message, ask, "Prometheus 没有返回抓取目标")
    down = [f for f in found if f.record.get("health") != "up"]
    if not down:
        text = f"{len(found)} 个抓取目标全部 up"
        cited = found[:MAX_LISTED]
    else:
        listed = "；".join(
            f"{f.record.get('job')} {f.record.get('instance')}（{f.record.get('health')}，lastError：{f.record.get('last_error') or '无'}）"
            for f in down[:MAX_LISTED]
        )
        text = f"{len(found)} 个抓取目标中 {len(down)} 个不健康：{listed}"
        cited = down[:MAX_LISTED]
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{text} · 来源 {_source(message)}",
        bindings=[f.binding for f in cited],
    )


def _logs(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    """A plain logs ask about a service is answered with its recent lines; one without a service, and a
    topic's, with the lines that have the asked property."""
    return _log_slot(ask, messages, world, wanted=ask.topic or ("" if ask.service else "error"))


def _log_slot(ask: Ask, messages: Sequence[dict], world: SlotWorld, *, wanted: str) -> Slot:
    """The lines served that have the `wanted` property (all of them for ""), grouped by template: each
    pattern's count, first and last time, and its newest line as the evidence ref."""
    # Searches on the ask's service (or on none): another service's lines are never this one's.
    searches = _messages(messages, "query_logs", lambda arguments: _on_service(ask, arguments.get("service")))
    # The first search whose lines have the property (a cause ask runs several), else the first search.
    message = next(
        (
            m
            for m in searches
            if m.get("success")
            and any(not wanted or _has(wanted, f.record, world.vocabulary) for f in _lines_served(m, ask))
        ),
        next(iter(searches), None),
    )
    if message is None or not message.get("success"):
        return _failure(message, ask, "未能检索日志")
    window = f"最近 {world.logs_window_minutes} 分钟"
    about = ask.service or "所有服务"
    label = world.vocabulary.label(wanted) if wanted else ""
    found = _lines_served(message, ask)
    limits = _logs_limits(ask, world)
    if not found:
        no_hit = _no_hit(message)
        return Slot(
            ask=ask,
            filled=no_hit is not None,
            conclusion=f"{window}未检索到 {about} 的{label}日志 · 来源 {_source(message)}",
            limits=limits,
            bindings=[no_hit] if no_hit else [],
        )
    kept = [f for f in found if not wanted or _has(wanted, f.record, world.vocabulary)]
    if not kept:
        levels = "、".join(sorted({str(f.record.get("level") or "未知").upper() for f in found}))
        below = "，均低于 ERROR" if wanted == "error" else f"，其中{label}日志 0 条"
        return Slot(
            ask=ask,
            filled=True,
            conclusion=f"{window} {about} 匹配的 {len(found)} 条日志级别为 {levels}{below} · 来源 {_source(message)}",
            limits=limits,
            bindings=[f.binding for f in found[:MAX_PATTERNS]],
        )
    patterns = patterns_mined([str(f.record.get("message", "")) for f in kept])
    top = patterns[:MAX_PATTERNS]
    listed = "；".join(f"「{_quotable(p.template)}」{p.count} 条{_span(p, kept)}" for p in top)
    total = (message.get("output") or {}).get("total", len(found))
    # Counted over the lines served; a source that matched more says so rather than implying all.
    counted = f"检索命中 {total} 条" + (f"，按最新 {len(found)} 条统计" if total > len(found) else "")
    return Slot(
        ask=ask,
        filled=True,
        conclusion=(
            f"{window} {about} 的{label}日志 {len(kept)} 条（{counted}），"
            f"{len(patterns)} 种模式：{listed} · 来源 {_source(message)}"
        ),
        limits=limits,
        # Lines come newest first: a pattern's first member is its newest line.
        bindings=[kept[p.members[0]].binding for p in top],
    )


def _lines_served(message: dict, ask: Ask) -> list[_Found]:
    """Every line of the ask's service the call served, read from its evidence refs: the message's output
    may hold only a prefix of long lines, its refs hold them all (up to the message's bound on refs)."""
    lines = (
        _Found(message, evidence_record(ref["text"]), ref)
        for ref in message.get("evidence_refs") or []
        if str(ref.get("raw_path", "")).startswith("$.logs[")
    )
    return [line for line in lines if _on_service(ask, line.record.get("service"))]


def _on_service(ask: Ask, service: str | None) -> bool:
    """Whether a search or a line with this service can be the ask's: its own service, or none said."""
    return not ask.service or service in (None, "", ask.service)


def _has(topic: str, record: dict, vocabulary: Vocabulary) -> bool:
    return has_property(
        topic,
        level=str(record.get("level", "")),
        message=str(record.get("message", "")),
        vocabulary=vocabulary,
    )


def _span(pattern: Pattern, kept: list[_Found]) -> str:
    """When a pattern's lines were written: `（10:01:02–10:15:40）` for more than one line."""
    times = [str(kept[i].record.get("timestamp", "")) for i in pattern.members]
    if pattern.count < 2 or not all(times):
        return ""
    return f"（{min(times)[-8:]}–{max(times)[-8:]}）"


def _cause(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    alerts, alert_message = _alert_found(ask, messages)
    logs = _log_slot(ask, messages, world, wanted=ask.topic or "error")
    firing = [f for f in alerts if f.record.get("state") == "firing"][:3]
    about = ask.subject or "所问对象"
    if not firing and not logs.filled:
        return _failure(alert_message, ask, f"未找到原因证据（已检索 {about} 的告警与日志）")
    # Lines found are symptoms; a search that found none is said beside them, never as one.
    lines_found = logs.filled and any(b.raw_path != NO_EVIDENCE_PATH for b in logs.bindings)
    symptoms = [_alert_text(f.record) for f in firing]
    if lines_found:
        symptoms.append(logs.conclusion.split(" · 来源")[0])
    inference = (
        f"。推断（未证实）：{firing[0].record['alert_name']} 与同期日志可能相关，需人工确认"
        if firing and lines_found
        else ""
    )
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{about} 的现象：{'；'.join(symptoms)}{inference}",
        limits=[] if lines_found else [logs.conclusion.split(" · 来源")[0]],
        bindings=[*(f.binding for f in firing), *(logs.bindings if lines_found else [])],
    )


def _runbook(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    message = next(iter(_messages(messages, "lookup_knowledge")), None)
    if message is None or not message.get("success"):
        return _failure(message, ask, "未能检索处理手册")
    # A subject's runbook is one that names it (or one of its alerts, or an alert's runbook_url): a
    # free-text hit on another service's runbook is not the subject's.
    names = runbook_names(ask, alerts_of(ask, messages))
    blocks = [
        f
        for f in _found(message, "evidence_blocks")
        if not names
        or {n.lower() for n in names} & {str(t).lower() for t in f.record.get("matched_terms") or []}
    ]
    if not blocks:
        return _unfilled(ask, "没有匹配的处理手册")
    # A runbook before a reviewed past case; within them the steps (mitigation, then diagnosis) before
    # the other sections, each in the retrieval's order.
    found = min(
        blocks,
        key=lambda f: (
            str(f.record.get("source_document", "")).startswith("case:"),
            _steps_rank(str(f.record.get("section", "")), world.vocabulary),
        ),
    )
    block = found.record
    kind = "历史案例" if str(block.get("source_document", "")).startswith("case:") else "处理手册"
    steps = _quotable(_steps(str(block.get("content", ""))))
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{kind}《{block.get('title', '')}》：{steps} · 来源 {block.get('source_document', '')}",
        bindings=[found.binding],
    )


def runbook_names(ask: Ask, alerts: Sequence[dict]) -> set[str]:
    """The names a runbook of the ask's subject is found by: the subject, the alerts on it
    and the last path segment of their `runbook_url`; empty when the ask names no subject."""
    if ask.subject_kind not in ("alert", "service") or not ask.subject:
        return set()
    names = {ask.subject}
    for alert in alerts:
        names.add(str(alert.get("alert_name") or ""))
        url = str((alert.get("annotations") or {}).get("runbook_url") or "")
        names.add(RUNBOOK_FILE.sub("", url.split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1]))
    return {name for name in names if name}


def _steps_rank(section: str, vocabulary: Vocabulary) -> int:
    intents = groups_in(section, vocabulary=vocabulary, table="intents")
    return next((rank for rank, intent in enumerate(STEP_INTENTS) if intent in intents), len(STEP_INTENTS))


def _action(ask: Ask, messages: Sequence[dict], world: SlotWorld) -> Slot:
    statement = READ_ONLY.format(word=ask.word.strip() or "操作")
    runbook = _runbook(ask, messages, world)
    if runbook.filled:
        return runbook.model_copy(update={"conclusion": f"{statement}；可参考{runbook.conclusion}"})
    return Slot(ask=ask, filled=True, conclusion=statement)


_READERS: dict[str, Callable[[Ask, Sequence[dict], SlotWorld], Slot]] = {
    "existence": _existence,
    "value": _value,
    "threshold": _threshold,
    "trend": _trend,
    "history": _history,
    "cause": _cause,
    "logs": _logs,
    "runbook": _runbook,
    "list": _listing,
    "priority": _listing,
    "health": _health,
    "action": _action,
}


# --- Small readers -----------------------------------------------------------------------------


def _series_found(ask: Ask, messages: Sequence[dict]) -> tuple[list[_Found], dict] | None:
    """The series of the ask's first PromQL call that returned any (else of its first), or None
    when none was made."""
    wanted = 0 if ask.kind == "value" else None
    calls = [
        m
        for m in _messages(messages, "query_promql", lambda a: "ALERTS_FOR_STATE" not in a.get("query", ""))
        if (wanted is None) == bool(_arguments(m).get("minutes"))
    ]
    if not calls:
        return None
    found = [(_found(m, "series"), m) for m in calls]
    service = ask.service if ask.subject_kind == "series" else ""
    for series, message in found:
        on_service = [f for f in series if not service or service in (f.record.get("metric") or {}).values()]
        if on_service:
            return on_service, message
    return found[0]


def on_topic(alerts: list[dict], ask: Ask, vocabulary: Vocabulary, *, or_all: bool = True) -> list[dict]:
    """The alerts an ask about a topic means: those of that topic, else (`or_all`) all of the subject's."""
    if not ask.topic or ask.subject_kind == "alert":
        return alerts
    topical = [a for a in alerts if alert_on_topic(a.get("alert_name", ""), ask.topic, vocabulary)]
    return topical or (alerts if or_all else [])


def alert_on_topic(alert: str, topic: str, vocabulary: Vocabulary) -> bool:
    """The vocabulary's topic of the alert, or a term of the topic in its name (`CheckoutErrorRatio`)."""
    if alert in vocabulary.alert_topics:
        return vocabulary.alert_topics[alert] == topic
    return any(
        term_pattern(term).search(" ".join(name_parts(alert)).lower())
        for term in vocabulary.groups.get(topic, [])
    )


def _on_topic_found(
    found: list[_Found], ask: Ask, vocabulary: Vocabulary, *, or_all: bool = True
) -> list[_Found]:
    wanted = {id(a) for a in on_topic([f.record for f in found], ask, vocabulary, or_all=or_all)}
    return [f for f in found if id(f.record) in wanted]


def _alert_text(record: dict) -> str:
    details = [record.get("state", ""), record.get("severity", "")]
    text = f"{record.get('service', '')} 的 {record.get('alert_name', '')} 告警（{'，'.join(d for d in details if d)}）"
    if record.get("value") not in (None, ""):
        text += f"，当前值 {number_text(str(record['value']))}"
    if record.get("duration"):
        text += f"，已持续 {record['duration']}"
    return text


def _priority(found: _Found) -> tuple[int, Decimal]:
    """Severity first, then how far the value is past the threshold (further first)."""
    record = found.record
    rank = SEVERITY_RANK.get(str(record.get("severity", "")).lower(), len(SEVERITY_RANK))
    comparison = comparison_of(record.get("expr") or "")
    value = _decimal(record.get("value"))
    threshold = _decimal(comparison.threshold if comparison else record.get("threshold"))
    if value is None or threshold is None or threshold == 0:
        return rank, Decimal(0)
    return rank, -abs(value / threshold)


def _against(record: dict, alerts: list[_Found], *, query: str) -> str:
    """A sample of an alert's own series (the query was that series), read against its threshold."""
    expr_series = {
        (c.series, f.record.get("alert_name")): c
        for f in alerts
        if (c := comparison_of(f.record.get("expr") or ""))
    }
    for (series, alert), comparison in expr_series.items():
        value = _decimal(_sample(record)[1])
        if value is not None and series == query:
            return f"，{alert} 阈值 {comparison.operator} {comparison.threshold_text}" + _past(
                value, comparison.operator, comparison.threshold, stated=False
            )
    return ""


def _past(value: object, operator: str, threshold: Decimal, *, stated: bool = True) -> str:
    number, limit = _decimal(value), _decimal(threshold)
    if number is None:
        return ""
    text = f"；当前值 {number_text(str(number))}" if stated else ""
    if operator in (">", ">=") and limit is not None and limit > 0 and number > limit:
        text += f"，为阈值的 {_n(number / limit)} 倍"
    return text


def _sample_text(record: dict) -> str:
    name = series_name(record.get("metric") or {})
    at, raw = _sample(record)
    when = f"，{datetime.fromtimestamp(float(at)):%H:%M:%S}" if at else ""
    return f"{name} 当前值 {number_text(str(raw))}{_unit(name, raw)}（采样时间{when.lstrip('，') or '未知'}）"


def _sample(record: dict) -> tuple[object, object]:
    """(time, value) of an instant sample: Prometheus writes `[ts, "v"]`; a bare value has no time."""
    value = record.get("value")
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    return None, value


def _unit(name: str, raw: object) -> str:
    """The sample as an SRE reads it, by the metric's unit suffix; the raw number stays beside it."""
    number = _decimal(raw)
    if number is None:
        return ""
    metric = name.split("{")[0]
    if metric.endswith("_bytes") and number >= 1024**2:
        return f" 字节（约 {_hundredths(number / 10**9)} GB / {_hundredths(number / 1024**3)} GiB）"
    if metric.endswith("_seconds"):
        return " 秒"
    if metric.endswith("_ratio"):
        return f"（{_hundredths(number * 100)}%）"
    return ""


def _hundredths(number: Decimal) -> str:
    return places_text(number, places=2)


def _numbers(record: dict) -> list[Decimal]:
    return [n for _, raw in record.get("values") or [] if (n := _decimal(raw)) is not None]


def _retention_limits(ask: Ask, message: dict) -> list[str]:
    retention = (message.get("output") or {}).get("retention_minutes")
    asked = ask.window.minutes + ask.window.end_minutes_ago
    limits = []
    if retention and asked > retention:
        limits.append(f"Prometheus 只保留最近 {_minutes_text(retention)} 的指标，更早的看不到")
    if asked > MAX_RANGE_MINUTES:
        limits.append(f"一次最多查询最近 {_minutes_text(MAX_RANGE_MINUTES)}")
    return limits


def _logs_limits(ask: Ask, world: SlotWorld) -> list[str]:
    if ask.window.asked and ask.window.minutes + ask.window.end_minutes_ago > world.logs_window_minutes:
        return [f"日志只能看到最近 {_minutes_text(world.logs_window_minutes)}"]
    return []


def _steps(content: str, limit: int = 240) -> str:
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    text = ""
    for line in lines:
        joined = f"{text}；{line}" if text else line
        if text and len(joined) > limit:
            break
        text = joined
    return text


def _quotable(text: str) -> str:
    """Evidence text that holds a command or an instruction is quoted in the evidence panel only."""
    return QUOTE_ONLY if instructions_in(text) else text


def _source(message: dict) -> str:
    return str(message.get("source") or message["tool_name"])


def _arguments(message: dict) -> dict:
    return message.get("arguments") or {}


def _decimal(value: object) -> Decimal | None:
    if value in (None, ""):
        return None
    return finite_number(str(value).strip().rstrip("%s"))


def _n(number: Decimal | float) -> str:
    return number_text(str(number))


def _minutes_text(minutes: int) -> str:
    if minutes % (24 * 60) == 0:
        return f"{minutes // (24 * 60)} 天"
    if minutes % 60 == 0:
        return f"{minutes // 60} 小时"
    return f"{minutes} 分钟"
