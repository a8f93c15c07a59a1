"""`runbook`: how to handle X — the steps of the matching runbook section, quoted (the alert's
`runbook_url` first), not its headings."""

from __future__ import annotations

import re
from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.shared import alerts_of, failure, found_in, quotable, results_of, unfilled
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.registry import KNOWLEDGE
from tools.evidence.result import ToolResult
from tools.terms import groups_in
from tools.vocabulary import Vocabulary

# The sections that hold a runbook's steps, in the order a runbook ask quotes them (vocabulary intents).
STEP_INTENTS = ("mitigation", "investigation")
RUNBOOK_FILE = re.compile(r"\.(?:md|markdown)$", re.IGNORECASE)


class Runbook(AskKind):
    name = "runbook"
    label = "处理手册步骤"
    words = "runbook"
    answers = frozenset({"what", "which"})

    def alerts_first(self, ask: Ask) -> bool:
        return named_subject(ask)

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        return runbook_search(ask, alerts=alerts, world=world)

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        return runbook_slot(ask, results, world)


def named_subject(ask: Ask) -> bool:
    """A runbook (or an action) is about a named subject's alerts (their runbooks), never all alerts."""
    return bool(ask.subject and ask.subject_kind in ("alert", "service"))


def runbook_search(ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
    names = sorted(runbook_names(ask, alerts) - {ask.subject})
    topic = world.vocabulary.canonical_term(ask.topic) if ask.topic else ""
    # The steps' intents, so the sections with steps rank first of the subject's sections: one
    # block per intent is what the slot quotes (the rest is left to the engine's own search).
    steps = [terms[0] for intent in STEP_INTENTS if (terms := world.vocabulary.intents.get(intent))]
    words = [ask.subject, *names, topic, ask.word, *steps]
    query = " ".join(dict.fromkeys(w for w in words if w))[:200] or ask.kind
    return [(KNOWLEDGE.tool, {"query": query, "top_k": len(STEP_INTENTS)})]


def runbook_slot(ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
    result = next(iter(results_of(results, KNOWLEDGE)), None)
    if result is None or not result.success:
        return failure(result, ask, world.unconfigured(KNOWLEDGE) or "未能检索处理手册")
    # A subject's runbook is one that names it (or one of its alerts, or an alert's runbook_url): a
    # free-text hit on another service's runbook is not the subject's.
    names = runbook_names(ask, alerts_of(ask, results))
    blocks = [
        f
        for f in found_in(result, KNOWLEDGE)
        if not names
        or {n.lower() for n in names} & {str(t).lower() for t in f.record.matched_terms or []}
    ]
    if not blocks:
        return unfilled(ask, "没有匹配的处理手册")
    # A runbook before a reviewed past case; within them the steps (mitigation, then diagnosis) before
    # the other sections, each in the retrieval's order.
    found = min(
        blocks,
        key=lambda f: (
            str(f.record.source_document).startswith("case:"),
            _steps_rank(str(f.record.section), world.vocabulary),
        ),
    )
    block = found.record
    kind = "历史案例" if str(block.source_document).startswith("case:") else "处理手册"
    steps = quotable(_steps(str(block.content)))
    return Slot(
        ask=ask,
        filled=True,
        conclusion=f"{kind}《{block.title}》：{steps}",
        source=block.source_document,
        bindings=[found.binding],
    )


def runbook_names(ask: Ask, alerts: Sequence[AlertRecord]) -> set[str]:
    """The names a runbook of the ask's subject is found by: the subject, the alerts on it
    and the last path segment of their `runbook_url`; empty when the ask names no subject."""
    if ask.subject_kind not in ("alert", "service") or not ask.subject:
        return set()
    names = {ask.subject}
    for alert in alerts:
        names.add(str(alert.alert_name or ""))
        url = str((alert.annotations or {}).get("runbook_url") or "")
        names.add(RUNBOOK_FILE.sub("", url.split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1]))
    return {name for name in names if name}


def _steps_rank(section: str, vocabulary: Vocabulary) -> int:
    intents = groups_in(section, vocabulary=vocabulary, table="intents")
    return next((rank for rank, intent in enumerate(STEP_INTENTS) if intent in intents), len(STEP_INTENTS))


def _steps(content: str, limit: int = 240) -> str:
    lines = [line.strip() for line in content.splitlines() if line.strip()]
    text = ""
    for line in lines:
        joined = f"{text}；{line}" if text else line
        if text and len(joined) > limit:
            break
        text = joined
    return text
