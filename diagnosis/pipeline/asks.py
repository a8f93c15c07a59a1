"""What a question asks: code reads it into asks, each about one subject, each with
the slot its answer must fill.

The words of each kind are vocabulary data (`Vocabulary.asks`), the subjects come from the question's
focus (names the sources know), the window from the question's own words (`windows`). Pure code.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from diagnosis.pipeline.focus import QuestionFocus, folded_name
from diagnosis.pipeline.windows import Window
from tools.terms import asks_in, term_pattern
from tools.vocabulary import Vocabulary

AskKind = Literal[
    "existence",
    "value",
    "threshold",
    "trend",
    "history",
    "cause",
    "logs",
    "runbook",
    "list",
    "priority",
    "health",
    "action",
]
SubjectKind = Literal["service", "alert", "series", "all"]
# How a gap names the ask: `未能回答：checkout 的当前值 — …`.
ASK_LABELS: dict[str, str] = {
    "existence": "是否存在",
    "value": "当前值",
    "threshold": "阈值",
    "trend": "趋势",
    "history": "触发历史",
    "cause": "原因",
    "logs": "日志",
    "runbook": "处理手册步骤",
    "list": "告警列表",
    "priority": "处理优先级",
    "health": "抓取目标健康状况",
    "action": "操作请求",
}
# The vocabulary field of each kind (`list` is `listing` there).
WORDS_FIELD = {kind: "listing" if kind == "list" else kind for kind in ASK_LABELS}
# A metric as PromQL names it: snake_case with at least one underscore (`node_load1`).
METRIC_NAME = re.compile(r"(?<![A-Za-z0-9_:\-])[a-z][a-zA-Z0-9]*(?:_[a-zA-Z0-9]+)+(?![A-Za-z0-9_:\-])")
# Label values a question may write beside a metric: a path (`/`, `/data`), a device (`eth0`, `sda1`),
# an address (`10.0.0.7:9100`); each standing alone.
LABEL_VALUE = re.compile(
    r"(?<![\w/.:-])(?:/[\w./-]*|[a-z]+[0-9]+|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?)(?![\w/.:-])"
)
# The polite frame of an action word: "帮我重启一下" asks to 重启.
POLITE = re.compile(r"^(?:帮我|帮忙|请你|请|给我|please\s+)|(?:一下|下)$", re.IGNORECASE)
# Kinds about one subject each; the others are about everything the sources hold (or one service).
PER_SUBJECT = ("existence", "value", "threshold", "trend", "history", "cause", "logs", "runbook")


class AskWindow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    minutes: int
    end_minutes_ago: int = 0
    label: str
    asked: bool = False

    @classmethod
    def of(cls, window: Window, *, now: datetime) -> AskWindow:
        return cls(
            minutes=window.minutes,
            end_minutes_ago=max(0, int((now - window.end).total_seconds() // 60)),
            label=window.label,
            asked=window.asked,
        )


class Ask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: AskKind
    # A service, alert or series name the sources know (or the question names); "" = all of them.
    subject: str = ""
    subject_kind: SubjectKind = "all"
    # The service an alert or series was asked about on ("billing 的 node_load1").
    service: str = ""
    # The vocabulary topic asked about (error, slow …), "" when none.
    topic: str = ""
    window: AskWindow
    # The word of an action ask ("重启"), so the statement names what cannot be done.
    word: str = ""
    # Label values the question writes beside a metric it names ("/", "eth0"): its series are those.
    values: tuple[str, ...] = ()

    def label(self) -> str:
        if self.service and self.subject and self.service != self.subject:
            about = f"{self.service} 的 {self.subject}"
        else:
            about = self.subject or self.service
        return f"{about} 的{ASK_LABELS[self.kind]}" if about else ASK_LABELS[self.kind]


def only_actions(asks: list[Ask]) -> bool:
    """The question asks for an action and nothing else ("帮我重启 X"): code's statement answers it, and
    nothing found about X may pose as the action's result."""
    return bool(asks) and all(ask.kind == "action" for ask in asks)


def asks_read(*, query: str, focus: QuestionFocus, vocabulary: Vocabulary, window: Window) -> list[Ask]:
    """The asks of a question, in the order of `ASK_LABELS`; none when the question asks nothing code
    can name a slot for (then the answer is judged on its claims alone, as before). `window`: the one
    the question names (`window_in`)."""
    text = _without_span(query, window.span)
    said = asks_in(text, vocabulary=vocabulary)
    kinds = _kinds_in(text, said, vocabulary)
    ask_window = AskWindow.of(window, now=window.now)
    series = _series_in(text, focus)
    topic = focus.topics[0] if focus.topics else ""
    if "action" in kinds:
        words = [
            POLITE.sub("", word).strip() or word
            for word in vocabulary.asks.action
            if term_pattern(word).search(text.lower())
        ]
        subject, subject_kind = _first_subject(focus, series)
        return [
            Ask(kind="action", subject=subject, subject_kind=subject_kind, window=ask_window, word=words[0])
        ]
    kinds = _resolved(kinds, focus=focus, series=series, window=window, about_alerts="alerts" in said)
    values = _values_in(text, series) if series else ()
    asks = []
    for kind in kinds:
        for subject, subject_kind, service in _subjects(kind, focus=focus, series=series):
            asks.append(
                Ask(
                    kind=kind,
                    subject=subject,
                    subject_kind=subject_kind,
                    service=service,
                    topic=topic,
                    window=ask_window,
                    values=values if subject_kind == "series" else (),
                )
            )
    return asks


def _kinds_in(text: str, said: set[str], vocabulary: Vocabulary) -> set[str]:
    """The kinds asked, from the vocabulary's ask words the text uses (`said`, by field)."""
    kinds = {kind for kind, field in WORDS_FIELD.items() if kind != "cause" and field in said}
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
    kinds: set[str], *, focus: QuestionFocus, series: list[str], window: Window, about_alerts: bool
) -> list[str]:
    """Which kinds the question asks, once the words that overlap are read together."""
    if "priority" in kinds:
        kinds -= {"list"}
    # A window that ended before now ("昨天", "上周") asks what happened then.
    if window.asked and not window.ends_now and not kinds & {"value", "trend", "threshold"}:
        kinds |= {"history"}
    if "trend" in kinds or ("value" in kinds and window.asked and window.ends_now):
        kinds = (kinds - {"value"}) | {"trend"}
    # A value, a threshold or a trend is about a series, an alert or a topic of a service.
    measurable = bool(series or focus.alerts or focus.topics)
    if not measurable:
        kinds -= {"value", "trend"}
    if "threshold" in kinds and not (focus.alerts or focus.services or series):
        kinds -= {"threshold"}
    if "list" in kinds and focus.alerts:
        kinds = (kinds - {"list"}) | {"existence"}
    if "existence" in kinds and not focus.alerts:
        # "是否存在 … 日志" asks about the logs; "是否存在连接池耗尽" about the lines of that topic;
        # "checkout 有告警吗" about the service's alerts.
        kinds -= {"existence"}
        if not kinds and focus.topics and not about_alerts:
            kinds = {"logs"}
        kinds |= {"list"} if focus.services and not kinds else set()
    if focus.alerts and not kinds:
        kinds = {"existence"}
    if kinds & {"history", "list", "priority", "health"}:
        kinds -= {"existence"}
    return [kind for kind in ASK_LABELS if kind in kinds]


def _subjects(kind: str, *, focus: QuestionFocus, series: list[str]) -> list[tuple[str, SubjectKind, str]]:
    """(subject, its kind, the service it was asked on) for each ask of one kind. An unknown service
    the question names is still the service asked on: its alert is never answered from another's."""
    named = focus.services or tuple(focus.unknown_services)
    service = named[0] if len(named) == 1 else ""
    if kind not in PER_SUBJECT:
        return [(service, "service", service)] if service else [("", "all", "")]
    if kind in ("value", "trend") and series:
        return [(name, "series", service) for name in series]
    if focus.alerts and kind != "logs":
        return [(alert, "alert", service) for alert in focus.alerts]
    if focus.services:
        return [(name, "service", name) for name in focus.services]
    return [("", "all", "")]


def _first_subject(focus: QuestionFocus, series: list[str]) -> tuple[str, SubjectKind]:
    if focus.services:
        return focus.services[0], "service"
    # A service no source knows is still what the action is about: no other service's runbook is its.
    if focus.unknown_services:
        return focus.unknown_services[0], "service"
    if focus.alerts:
        return focus.alerts[0], "alert"
    if series:
        return series[0], "series"
    return "", "all"


def _series_in(text: str, focus: QuestionFocus) -> list[str]:
    """Metric names the question writes (`node_load1`), other than the names it reads as subjects."""
    known = {folded_name(name) for name in (*focus.services, *focus.alerts)}
    return list(
        dict.fromkeys(m.group(0) for m in METRIC_NAME.finditer(text) if folded_name(m.group(0)) not in known)
    )


def _values_in(text: str, series: list[str]) -> tuple[str, ...]:
    """Words shaped like label values (a path, a device, an address) other than the metric names."""
    return tuple(dict.fromkeys(m.group(0) for m in LABEL_VALUE.finditer(text) if m.group(0) not in series))


def _without_span(text: str, span: tuple[int, int] | None) -> str:
    """The question without its window phrase, so "过去 15 分钟" is not read as a value's "多少"."""
    if span is None:
        return text
    start, end = span
    return text[:start] + " " * (end - start) + text[end:]
