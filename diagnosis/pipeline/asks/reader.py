"""What a question asks: code reads it into asks, each about one subject, each with the slot its
answer must fill.

The words of each kind are vocabulary data (`Vocabulary.asks`, the field a kind names), the subjects
come from the question's focus (names the sources know), the window from the question's own words
(`windows`). Where the words of several kinds overlap, `_resolved` reads them together.
"""

from __future__ import annotations

import re

from diagnosis.pipeline.ask import Ask, AskWindow, SubjectKind
from diagnosis.pipeline.asks.action import Action, action_asked, action_requested
from diagnosis.pipeline.asks.logs import measure_in, share_in
from diagnosis.pipeline.asks.measured import Asked, MetricWords, measure_asked
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.focus import QuestionFocus, folded_name
from diagnosis.pipeline.windows import Window
from tools.metric_query import TREND_RATE_MINUTES, Measure
from tools.terms import asks_in, term_pattern
from tools.vocabulary import Vocabulary

# A metric as PromQL names it: snake_case with at least one underscore (`node_load1`).
METRIC_NAME = re.compile(r"(?<![A-Za-z0-9_:\-])[a-z][a-zA-Z0-9]*(?:_[a-zA-Z0-9]+)+(?![A-Za-z0-9_:\-])")
# Label values a question may write beside a metric: a path (`/`, `/data`), a device (`eth0`, `sda1`),
# an address (`10.0.0.7:9100`); each standing alone.
LABEL_VALUE = re.compile(
    r"(?<![\w/.:-])(?:/[\w./-]*|[a-z]+[0-9]+|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?)(?![\w/.:-])"
)


def asks_read(
    *,
    query: str,
    focus: QuestionFocus,
    vocabulary: Vocabulary,
    window: Window,
    metric_words: MetricWords | None = None,
) -> list[Ask]:
    """The asks of a question, in the order of `KINDS`; none when the question asks nothing code can
    name a slot for (then the answer is judged on its claims alone, as before). `window`: the one the
    question names (`window_in`); `metric_words`: the metric catalog its words are read against (a
    value or trend of a rate, a p99, a ratio is the query built from it)."""
    text = without_window(query, window)
    # A request to act is answered by code's statement; its clause's other words are its object
    # ("把告警阈值改成 90%" asks no threshold).
    action = action_requested(text, vocabulary=vocabulary)
    if action:
        text = _masked(text, action[1])
    said = asks_in(text, vocabulary=vocabulary, apart={kind.words for kind in KINDS.values()})
    measure = measure_in(text, focus=focus, vocabulary=vocabulary, logs_asked="logs" in said)
    series = _series_in(text, focus)
    # A count of log lines is the logs' to answer; any other quantity, the metric catalog's.
    asked = (
        Asked()
        if measure is not None
        else _measure_asked(text, metric_words, focus=focus, series=series, window=window)
    )
    if measure is None and asked.unnamed and (share := share_in(text, vocabulary=vocabulary)):
        # A status's share the catalog has no metric of (an exporter without status codes) is counted
        # in the access lines.
        measure, asked = share, Asked()
    kinds = _kinds_in(text, said, vocabulary, counted=measure is not None) - {Action.name}
    ask_window = AskWindow.of(window, now=window.now)
    topic = focus.topics[0] if focus.topics else ""
    kinds = _with_measure(kinds, asked, focus=focus)
    kinds = _resolved(
        kinds,
        focus=focus,
        series=series,
        window=window,
        about_alerts="alerts" in said,
        measured=asked.quantity is not None or bool(asked.unnamed and metric_words and metric_words.queried),
        increase=asked.increase,
    )
    values = _values_in(text, series) if series else ()
    asks = []
    for kind in kinds:
        # A count of log lines names its own topic (the slow one of "超过 500 ms 的慢查询").
        counted = {"topic": topic} | ((measure or {}) if kind == "logs" else {})
        measured = asked
        if kind == "trend" and asked.quantity is not None and asked.quantity.range_minutes:
            # A trend is a range of rates, each over the usual few minutes, not one over its window.
            measured = _measure_asked(
                text, metric_words, focus=focus, series=series, window=None, minutes=TREND_RATE_MINUTES
            )
        if KINDS[kind].series_subject and measured.quantity is not None:
            asks.append(_measure_ask(kind, measured.quantity, focus=focus, topic=topic, window=ask_window))
            continue
        for subject, subject_kind, service in _subjects(kind, focus=focus, series=series):
            asks.append(
                Ask(
                    kind=kind,
                    subject=subject,
                    subject_kind=subject_kind,
                    service=service,
                    window=ask_window,
                    values=values if subject_kind == "series" else (),
                    **counted,
                    unnamed=measured.unnamed if KINDS[kind].series_subject else "",
                )
            )
    # An action word names an action only as a request to act (naming a metric or an alert it is a
    # topic); asked beside questions ("为什么慢？帮我重启一下"), the questions are answered too.
    if action:
        asks.append(action_asked(action[0], focus=focus, series=series, window=ask_window))
    return asks


def _measure_asked(
    text: str,
    words: MetricWords | None,
    *,
    focus: QuestionFocus,
    series: list[str],
    window: Window | None,
    minutes: int = 0,
) -> Asked:
    """The catalog's reading of the words; a window the question names is the range a value is
    computed over (the increase "最近 30 分钟" asks), never a window it does not; `minutes`, the range
    when no window is (a trend's rates)."""
    if window is not None and window.asked and window.ends_now:
        minutes = window.minutes
    return measure_asked(
        text, words=words, series=series, window_minutes=minutes, alerts_named=bool(focus.alerts)
    )


def _with_measure(kinds: set[str], asked: Asked, *, focus: QuestionFocus) -> set[str]:
    """A computation the catalog answers is a value asked, without a value word ("redis 缓存命中率",
    "p99 of …"); a count of a counter's events ("死锁多少次") is its increase, not an alert's history;
    a question understood by nothing but its metric words asks their value."""
    if asked.quantity is None:
        return kinds
    if asked.increase and "history" in kinds and not focus.alerts:
        kinds = (kinds - {"history"}) | {"value"}
    if not kinds & {"value", "trend"} and (asked.computes or not (kinds or focus.topics)):
        kinds = kinds | {"value"}
    return kinds


def _measure_ask(kind: str, quantity: Measure, *, focus: QuestionFocus, topic: str, window: AskWindow) -> Ask:
    """One ask of the quantity the catalog built: it is on every subject the question names."""
    named = focus.services or tuple(focus.unknown_services)
    return Ask(
        kind=kind,
        subject=quantity.metric,
        subject_kind="series",
        service=named[0] if len(named) == 1 else "",
        topic=topic,
        window=window,
        quantity=quantity,
    )


def _kinds_in(text: str, said: set[str], vocabulary: Vocabulary, *, counted: bool) -> set[str]:
    """The kinds asked, from the vocabulary's ask words the text uses (`said`, by field). A count of
    log lines (`counted`: "404 多不多", "慢查询有几条") is a logs ask, whose "多少" asks no value."""
    kinds = {name for name, kind in KINDS.items() if name != "cause" and kind.words in said}
    if counted:
        kinds = (kinds - {"value", "trend"}) | {"logs"}
    cause_words = [word for word in vocabulary.asks.cause if term_pattern(word).search(text.lower())]
    # A cause word that is also a topic's term names a symptom ("很慢"); beside another ask it is that
    # ask's topic ("是否存在慢请求日志"), not a question of why.
    topic_terms = {term.lower() for terms in vocabulary.groups.values() for term in terms}
    if any(word.lower() not in topic_terms for word in cause_words) or (cause_words and not kinds):
        kinds.add("cause")
    # "内存情况怎么样" asks how the topic is doing now: its value; beside another ask, that ask says how.
    if not kinds and "status" in said:
        kinds.add("value")
    return kinds


def _resolved(
    kinds: set[str],
    *,
    focus: QuestionFocus,
    series: list[str],
    window: Window,
    about_alerts: bool,
    measured: bool = False,
    increase: bool = False,
) -> list[str]:
    """Which kinds the question asks, once the words that overlap are read together. `measured`: its
    words name a quantity of the metric catalog (or name nothing there); `increase`: that quantity is
    an increase over the window asked (a value, not a trend)."""
    if "priority" in kinds:
        kinds -= {"list"}
    # "Which fired first" is when alerts began, not which to handle first ("first" is both words').
    if "first" in kinds:
        kinds -= {"priority"}
    # "What is the first step of the runbook": its value word asks what the runbook says, unless the
    # question names a series or a quantity too.
    if "runbook" in kinds and not (series or measured):
        kinds -= {"value"}
    # A window that ended before now ("昨天", "上周") asks what happened then.
    if window.asked and not window.ends_now and not kinds & {"value", "trend", "threshold"}:
        kinds |= {"history"}
    if "trend" in kinds or ("value" in kinds and window.asked and window.ends_now and not increase):
        kinds = (kinds - {"value"}) | {"trend"}
    # A value, a threshold or a trend is about a series, an alert or a topic of a service.
    measurable = bool(series or focus.alerts or focus.topics or measured)
    if not measurable:
        kinds -= {"value", "trend"}
    if "threshold" in kinds and not (focus.alerts or focus.services or series):
        kinds -= {"threshold"}
    # An alert or a service no source knows is still what the question asks about: answered as not
    # found, never dropped (then nothing would answer its question word) nor swapped for another.
    alerts = focus.alerts or tuple(focus.unknown_alerts)
    services = focus.services or tuple(focus.unknown_services)
    if "list" in kinds and alerts:
        kinds = (kinds - {"list"}) | {"existence"}
    if "existence" in kinds and not alerts:
        # "是否存在 … 日志" asks about the logs; "是否存在连接池耗尽" about the lines of that topic;
        # "checkout 有告警吗" about the service's alerts.
        kinds -= {"existence"}
        if not kinds and focus.topics and not about_alerts:
            kinds = {"logs"}
        kinds |= {"list"} if services and not kinds else set()
    if alerts and not kinds:
        kinds = {"existence"}
    # What fired over a window, asked with history words ("上周出过什么告警"), is the history's list.
    if "history" in kinds:
        kinds -= {"list"}
    if kinds & {"history", "list", "priority", "first", "health", "change"}:
        kinds -= {"existence"}
    # What changed is asked of the investigation; a cause word beside it ("what changed before") is the same.
    if "change" in kinds:
        kinds -= {"cause"}
    return [kind for kind in KINDS if kind in kinds]


def _subjects(kind: str, *, focus: QuestionFocus, series: list[str]) -> list[tuple[str, SubjectKind, str]]:
    """(subject, its kind, the service it was asked on) for each ask of one kind. An unknown service
    the question names is still the service asked on: its alert is never answered from another's."""
    named = focus.services or tuple(focus.unknown_services)
    service = named[0] if len(named) == 1 else ""
    asked = KINDS[kind]
    if not asked.per_subject:
        return [(service, "service", service)] if service else [("", "all", "")]
    if asked.series_subject and series:
        return [(name, "series", service) for name in series]
    alerts = focus.alerts or tuple(focus.unknown_alerts)
    if alerts and asked.alert_subject:
        return [(alert, "alert", service) for alert in alerts]
    services = focus.services or tuple(focus.unknown_services)
    if services:
        return [(name, "service", name) for name in services]
    return [("", "all", "")]


def _series_in(text: str, focus: QuestionFocus) -> list[str]:
    """Metric names the question writes (`node_load1`), other than the names it reads as subjects."""
    known = {folded_name(name) for name in (*focus.services, *focus.alerts)}
    return list(
        dict.fromkeys(m.group(0) for m in METRIC_NAME.finditer(text) if folded_name(m.group(0)) not in known)
    )


def _values_in(text: str, series: list[str]) -> tuple[str, ...]:
    """Words shaped like label values (a path, a device, an address) other than the metric names."""
    return tuple(dict.fromkeys(m.group(0) for m in LABEL_VALUE.finditer(text) if m.group(0) not in series))


def _masked(text: str, span: tuple[int, int]) -> str:
    start, end = span
    return text[:start] + " " * (end - start) + text[end:]


def without_window(text: str, window: Window) -> str:
    """The question without its window phrase, so "过去 15 分钟" is not read as a value's "多少"."""
    return text if window.span is None else _masked(text, window.span)
