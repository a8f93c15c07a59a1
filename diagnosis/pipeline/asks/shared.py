"""What several ask kinds read and write alike: the records of a tool result with the refs that
cite them, the subject's alerts, the asked series, numbers and windows as the conclusions say
them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.contracts import EvidenceBinding
from diagnosis.pipeline.injected_commands import QUOTE_ONLY, instructions_in
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.kind import EvidenceKind
from tools.evidence.record import EvidenceRecord
from tools.evidence.registry import ALERTS, SERIES
from tools.evidence.result import Ref, ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.numbers import finite_number, number_text
from tools.promql import comparison_of, series_query
from tools.terms import name_parts, term_pattern
from tools.vocabulary import Vocabulary

# query_promql's own bound on a range.
MAX_RANGE_MINUTES = 7 * 24 * 60
MAX_LISTED = 8
RecordT = TypeVar("RecordT", bound=EvidenceRecord)


@dataclass(frozen=True)
class Found(Generic[RecordT]):
    """One record of a tool result and the evidence ref that cites it."""

    result: ToolResult
    record: RecordT
    ref: Ref

    @property
    def binding(self) -> EvidenceBinding:
        return EvidenceBinding.of_ref(self.result, self.ref)


def found_in(result: ToolResult, kind: EvidenceKind) -> list[Found[Any]]:
    """The records of a result of that kind, each with the ref that cites it (`$.alerts[0]`)."""
    if not result.success or not kind.owns(result.tool_name):
        return []
    return [Found(result, record, ref) for record, ref in result.cited()]


def results_of(
    results: Sequence[ToolResult], kind: EvidenceKind, match: Callable[[dict], bool] = lambda _: True
) -> list[ToolResult]:
    return [r for r in results if kind.owns(r.tool_name) and match(r.arguments)]


def alert_arguments(ask: Ask) -> dict:
    if ask.subject_kind == "alert":
        return {"alert_name": ask.subject} | ({"service": ask.service} if ask.service else {})
    return {"service": ask.subject} if ask.subject_kind == "service" and ask.subject else {}


def alerts_of(ask: Ask, results: Sequence[ToolResult]) -> list[AlertRecord]:
    arguments = alert_arguments(ask)
    return [
        f.record for r in results_of(results, ALERTS, lambda a: a == arguments) for f in found_in(r, ALERTS)
    ]


def alert_found(
    ask: Ask, results: Sequence[ToolResult]
) -> tuple[list[Found[AlertRecord]], ToolResult | None]:
    """The alerts the ask is about and the result that found them: the ask's own call, else any
    alert query's records about the subject (None when no alert query was made)."""
    arguments = alert_arguments(ask)
    calls = results_of(results, ALERTS)
    exact = [r for r in calls if r.arguments == arguments]
    result = next(iter(exact or calls), None)
    if result is None:
        return [], None
    found = found_in(result, ALERTS)
    return (found if exact else [f for f in found if _about(f.record, ask)]), result


def _about(record: AlertRecord, ask: Ask) -> bool:
    if ask.subject_kind == "alert":
        return record.alert_name == ask.subject and (not ask.service or record.service == ask.service)
    if ask.subject_kind == "service" and ask.subject:
        return record.service == ask.subject
    return True


def unfilled(ask: Ask, why: str, *, limits: Sequence[str] = ()) -> Slot:
    return Slot(ask=ask, filled=False, why=why, limits=list(limits))


def failure(result: ToolResult | None, ask: Ask, missing: str) -> Slot:
    if result is None:
        return unfilled(ask, missing)
    if not result.success:
        return unfilled(ask, f"数据源 {source_of(result)} 调用失败")
    return unfilled(ask, missing)


def no_hit(result: ToolResult) -> EvidenceBinding | None:
    ref = result.no_hit()
    return EvidenceBinding.of_ref(result, ref) if ref else None


def alert_text(record: AlertRecord) -> str:
    details = [record.state, record.severity]
    about = f"{record.subject()} 的 " if record.subject() else ""
    text = f"{about}{record.alert_name} 告警（{'，'.join(d for d in details if d)}）"
    if record.value not in (None, ""):
        text += f"，当前值 {number_text(str(record.value))}"
    if record.duration:
        text += f"，已持续 {record.duration}"
    return text


# --- Topics and series -------------------------------------------------------------------------


def on_topic(
    alerts: list[AlertRecord], ask: Ask, vocabulary: Vocabulary, *, or_all: bool = True
) -> list[AlertRecord]:
    """The alerts an ask about a topic means: those of that topic, else (`or_all`) all of the subject's."""
    if not ask.topic or ask.subject_kind == "alert":
        return alerts
    topical = [a for a in alerts if alert_on_topic(a.alert_name, ask.topic, vocabulary)]
    return topical or (alerts if or_all else [])


def alert_on_topic(alert: str, topic: str, vocabulary: Vocabulary) -> bool:
    """The vocabulary's topic of the alert, or a term of the topic in its name (`CheckoutErrorRatio`)."""
    if alert in vocabulary.alert_topics:
        return vocabulary.alert_topics[alert] == topic
    return any(
        term_pattern(term).search(" ".join(name_parts(alert)).lower())
        for term in vocabulary.groups.get(topic, [])
    )


def on_topic_found(
    found: list[Found[AlertRecord]], ask: Ask, vocabulary: Vocabulary, *, or_all: bool = True
) -> list[Found[AlertRecord]]:
    wanted = {id(a) for a in on_topic([f.record for f in found], ask, vocabulary, or_all=or_all)}
    return [f for f in found if id(f.record) in wanted]


def series_queries(ask: Ask, alerts: list[AlertRecord], world: SlotWorld) -> list[str]:
    """The asked series: the metric the question names; else the asked alert's own series (its `expr`
    without the comparison); else, for a topic, the series of the subject's alerts on that topic, or
    the vocabulary's queries of the topic (on the asked service, or on every series without one).
    A measure the catalog built is its own query; words that name nothing in the catalog query nothing."""
    if ask.quantity is not None:
        return [ask.quantity.query]
    if ask.unnamed:
        return []
    if ask.subject_kind == "series":
        return [series_query(ask.subject, subject=ask.service, carrier=world.carrier, values=ask.values)]
    about = on_topic(alerts, ask, world.vocabulary)
    templated = bool(
        ask.topic and ask.subject_kind != "alert" and world.vocabulary.promql_topics.get(ask.topic)
    )
    topic_queries = (
        world.vocabulary.topic_queries(ask.topic, service=ask.service, carrier=world.carrier)[:2]
        if templated
        else []
    )
    # A topic is that topic's series, not whatever the subject's other alerts watch; asked of every
    # subject ("主机内存还剩多少"), it is the topic's series, not the few some alert rules watch.
    if templated and ask.subject_kind == "all":
        return topic_queries
    if templated and not any(
        alert_on_topic(a.alert_name, ask.topic, world.vocabulary) for a in about
    ):
        return topic_queries
    own = [c.series for a in about if (c := comparison_of(a.expr or ""))]
    return list(dict.fromkeys(own))[:3] or topic_queries


def series_found(
    ask: Ask, results: Sequence[ToolResult], *, instant: bool
) -> tuple[list[Found[SeriesRecord]], ToolResult] | None:
    """The series of the ask's first PromQL call (an `instant` one, else a range) that returned any
    (else of its first), or None when none was made."""
    calls = [
        r
        for r in results_of(results, SERIES, lambda a: "ALERTS_FOR_STATE" not in a.get("query", ""))
        if (not instant) == bool(r.request.minutes)
        and (ask.quantity is None or r.request.query == ask.quantity.query)
    ]
    if not calls:
        return None
    found = [(found_in(r, SERIES), r) for r in calls]
    service = ask.service if ask.subject_kind == "series" else ""
    for series, result in found:
        on_service = [f for f in series if not service or service in (f.record.metric or {}).values()]
        if on_service:
            return on_service, result
    return found[0]


def past_threshold(value: object, operator: str, threshold: Decimal, *, stated: bool = True) -> str:
    """How far a value is past an alert's threshold: `；当前值 0.33，为阈值的 14.26 倍`."""
    number, limit = decimal_of(value), decimal_of(threshold)
    if number is None:
        return ""
    text = f"；当前值 {number_text(str(number))}" if stated else ""
    if operator in (">", ">=") and limit is not None and limit > 0 and number > limit:
        text += f"，为阈值的 {number_said(number / limit)} 倍"
    return text


def retention_limits(ask: Ask, result: ToolResult) -> list[str]:
    retention = result.details.get("retention_minutes")
    asked = ask.window.minutes + ask.window.end_minutes_ago
    limits = []
    if retention and asked > retention:
        limits.append(f"Prometheus 只保留最近 {minutes_text(retention)} 的指标，更早的看不到")
    if asked > MAX_RANGE_MINUTES:
        limits.append(f"一次最多查询最近 {minutes_text(MAX_RANGE_MINUTES)}")
    return limits


# --- Small readers -----------------------------------------------------------------------------


def quotable(text: str) -> str:
    """Evidence text that holds a command or an instruction is quoted in the evidence panel only."""
    return QUOTE_ONLY if instructions_in(text) else text


def source_of(result: ToolResult) -> str:
    return result.source or result.tool_name


def decimal_of(value: object) -> Decimal | None:
    if value in (None, ""):
        return None
    return finite_number(str(value).strip().rstrip("%s"))


def number_said(number: Decimal | float) -> str:
    return number_text(str(number))


def minutes_text(minutes: int) -> str:
    if minutes % (24 * 60) == 0:
        return f"{minutes // (24 * 60)} 天"
    if minutes % 60 == 0:
        return f"{minutes // 60} 小时"
    return f"{minutes} 分钟"
