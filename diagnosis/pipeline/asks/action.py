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
# The polite frame of an action word: "帮我重启一下" asks to 重启.
POLITE = re.compile(r"^(?:帮我|帮忙|请你|请|给我|please\s+)|(?:一下|下)$", re.IGNORECASE)


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
    text: str, *, focus: QuestionFocus, series: list[str], window: AskWindow, vocabulary: Vocabulary
) -> Ask:
    """The one ask of a question that asks for an action: its word, about the first subject named."""
    words = [
        POLITE.sub("", word).strip() or word
        for word in vocabulary.asks.action
        if term_pattern(word).search(text.lower())
    ]
    subject, subject_kind = _first_subject(focus, series)
    return Ask(kind=Action.name, subject=subject, subject_kind=subject_kind, window=window, word=words[0])


def only_actions(asks: list[Ask]) -> bool:
    """The question asks for an action and nothing else ("帮我重启 X"): code's statement answers it, and
    nothing found about X may pose as the action's result."""
    return bool(asks) and all(ask.kind == Action.name for ask in asks)


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
