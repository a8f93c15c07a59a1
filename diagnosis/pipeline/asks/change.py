"""`change`: what changed (变了什么、之前发生了什么、what changed before …): the same investigation as
a cause ask (§23), its moves listed by time instead of ranked as causes, from a while before the
asked alert started (or the stated time), so what moved before it shows first:

    结论：变化（按时间）：<subject>（<what moved>，<onset>起，<before> → <after>）；…

or `结论：未找到变化：<what was searched>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.cause import Cause, investigation_plan
from diagnosis.pipeline.asks.kind import AskKind, Call, SlotWorld
from diagnosis.pipeline.asks.logs import log_search
from diagnosis.pipeline.asks.shared import alert_found
from diagnosis.pipeline.investigation.conclusion import NOT_FOUND, candidate_parts, joined, searched_said
from diagnosis.pipeline.investigation.investigate import Investigation, investigated
from diagnosis.pipeline.investigation.records import RecordMove, record_moves
from diagnosis.pipeline.slot import Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.result import ToolResult

CHANGES = "变化（按时间）："
NO_CHANGE = "未找到变化："
# The most changes listed; the window opens this long before the asked start.
MAX_CHANGES = 5
BEFORE = timedelta(minutes=15)


class Change(AskKind):
    name = "change"
    label = "变化"
    words = "change"
    # "What changed before …", "which moved first", "when did it start".
    answers = frozenset({"what", "which", "when"})
    call_budget = Cause.call_budget
    investigates = True

    def calls(self, ask: Ask, *, alerts: list[AlertRecord], world: SlotWorld) -> list[Call]:
        plan = investigation_plan(ask, alerts, world, lead=BEFORE)
        return [*plan.calls(), *log_search(ask, alerts=alerts, world=world)]

    def read(self, ask: Ask, results: Sequence[ToolResult], world: SlotWorld) -> Slot:
        found, _ = alert_found(ask, results)
        plan = investigation_plan(ask, [f.record for f in found], world, lead=BEFORE)
        investigation = investigated(plan, results, services=world.services)
        moves = record_moves(results, subject=ask.service)
        if not investigation.candidates and not moves:
            searched = searched_said(investigation).removeprefix(NOT_FOUND)
            return Slot(
                ask=ask, filled=True, conclusion=NO_CHANGE + searched, computed_from=investigation.read
            )
        return _changes_slot(ask, investigation, moves)


def _changes_slot(ask: Ask, investigation: Investigation, moves: Sequence[RecordMove]) -> Slot:
    """Every service's weightiest move and the alerts' and lines' moves, in the order they began."""
    parts = [*candidate_parts(investigation, limit=MAX_CHANGES), *(move.said() for move in moves)]
    listed = sorted(parts, key=lambda part: part.onset)[:MAX_CHANGES]
    said = joined(listed, lead=CHANGES, then="；")
    return Slot(
        ask=ask,
        filled=True,
        conclusion=said.text,
        bindings=said.bindings,
        derived=said.derived,
        timeline=said.marks,
        inference=True,
        subjects=[c.subject for c in investigation.candidates[:MAX_CHANGES]] + [m.subject for m in moves],
        candidates=said.candidates,
        computed_from=investigation.read,
    )
