"""`action`: restart, scale, roll back — the statement that the assistant reads evidence and cannot
act, with the matching runbook's steps if any; nothing found about the subject poses as the result."""

from __future__ import annotations

import re
from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask, AskWindow, SubjectKind
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.runbook import named_subject, runbook_search, runbook_slot
from diagnosis.pipeline.focus import QuestionFocus
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.result import ToolResult
from tools.terms import term_pattern
from tools.vocabulary import Vocabulary

READ_ONLY = "本助手只读取告警、指标、日志与处理手册，不能执行「{word}」等操作"
# A clause of a question and how it ends: an action word is read with the words of its own clause,
# and a clause ending in a question mark asks about the action unless it is framed as a request.
CLAUSE = re.compile(r"([^，,。；;！!？?\n]*)([，,。；;！!？?\n]?)")
QUESTION_MARKS = "？?"
# An action word glued to an identifier is part of a name (`xact_rollback`, `KubePodRestart-x`).
IDENTIFIER_CHAR = re.compile(r"[a-z0-9_./-]")
# What may stand between an action word and the word naming its measure: "重启的次数", "rollback the alert".
BEFORE_MEASURE = re.compile(r"^[\s的]*(?:the\s+)?")
# A value the action sets: "调到 200", "扩容到 6 个实例", "scale cart-api to 6".
TARGET_VALUE = re.compile(r"(?:[到成为至]|(?<![a-z])to)\s*\d")
# Nothing after the word but a softener: "checkout 重启吧".
CLAUSE_TAIL = re.compile(r"^[\s吧下了呢]*$")

class Action(AskKind):
    name = "action"
    label = "操作请求"
    words = "action"
    per_subject = False

    def alerts_first(self, ask: Ask) -> bool:
        return named_subject(ask)

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        return runbook_search(ask, alerts=alerts, world=world)

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        statement = READ_ONLY.format(word=ask.word.strip() or "操作")
        runbook = runbook_slot(ask, results, world)
        if runbook.filled:
            return runbook.model_copy(update={"conclusion": f"{statement}；可参考{runbook.conclusion}"})
        return Slot(ask=ask, filled=True, conclusion=statement)


def action_asked(
    word: str, *, focus: QuestionFocus, series: list[str], window: AskWindow
) -> Ask:
    """The one ask of a question that asks for an action: its word, about the first subject named."""
    subject, subject_kind = _first_subject(focus, series)
    return Ask(kind=Action.name, subject=subject, subject_kind=subject_kind, window=window, word=word)


def action_requested(text: str, *, vocabulary: Vocabulary) -> tuple[str, tuple[int, int]] | None:
    """The action word a question uses as a request to act ("帮我重启", "把 max_connections 调到 200",
    "scale up catalog") and the span of its clause (the words there are the action's object, not
    questions), or None. The same word naming a metric or an alert (回滚率, 重启次数, "the rollback
    alert"), inside a name (`xact_rollback`), or asked about ("为什么一直重启", "did it restart?") is a
    topic, not a request. Read per clause, with the vocabulary's words: `action`, `request`, `measure`,
    and the question words (`interrogatives`, `asks.guidance`)."""
    asks = vocabulary.asks
    asking = [*vocabulary.interrogative_words(), *asks.guidance]
    for found in CLAUSE.finditer(text.lower()):
        clause, mark = found.group(1), found.group(2)
        framed = _has_any(clause, asks.request)
        if _has_any(clause, asking) or (mark in QUESTION_MARKS and mark and not framed):
            continue
        for word, start, end in _words_in(clause, asks.action):
            if _is_topic(clause, start, end, asks.measure):
                continue
            before, after = clause[:start], clause[end:]
            imperative = not _without_words(before, asks.request).strip() or bool(CLAUSE_TAIL.match(after))
            if framed or imperative or TARGET_VALUE.search(word[-1:] + after):
                return _bare(word, asks.request), found.span()
    return None


def only_actions(asks: list[Ask]) -> bool:
    """The question asks for an action and nothing else ("帮我重启 X"): code's statement answers it, and
    nothing found about X may pose as the action's result."""
    return bool(asks) and all(ask.kind == Action.name for ask in asks)


def _words_in(text: str, words: list[str]) -> list[tuple[str, int, int]]:
    """(word, start, end) of each word the text uses, longer words first where they overlap."""
    found: list[tuple[str, int, int]] = []
    for word in sorted(words, key=len, reverse=True):
        for match in term_pattern(word).finditer(text):
            if all(match.end() <= s or match.start() >= e for _, s, e in found):
                found.append((word, *match.span()))
    return sorted(found, key=lambda item: item[1])


def _has_any(text: str, words: list[str]) -> bool:
    return any(term_pattern(word).search(text) for word in words)


def _without_words(text: str, words: list[str]) -> str:
    for word in sorted(words, key=len, reverse=True):
        text = term_pattern(word).sub(" ", text)
    return text


def _is_topic(clause: str, start: int, end: int, measures: list[str]) -> bool:
    """The action word is part of a name, or names what is measured or alerted on."""
    glued = (start and IDENTIFIER_CHAR.match(clause[start - 1])) or (
        end < len(clause) and IDENTIFIER_CHAR.match(clause[end])
    )
    if glued:
        return True
    after = BEFORE_MEASURE.sub("", clause[end:])
    return any(term_pattern(measure).match(after) for measure in measures)


def _bare(word: str, requests: list[str]) -> str:
    """The action itself, without a frame written into the word ("帮我执行" → 执行)."""
    return _without_words(word, requests).strip() or word


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
