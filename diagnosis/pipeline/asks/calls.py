"""The calls the asks need: made by code before the executor, whichever engine runs, so its plan
holds them and it starts from their results. Each kind says which calls (`AskKind.alerts_first`,
`AskKind.calls`); this runs them."""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.action import only_actions
from diagnosis.pipeline.asks.kind import Call, SlotWorld
from diagnosis.pipeline.asks.registry import KINDS
from diagnosis.pipeline.asks.shared import alert_arguments, alerts_of
from diagnosis.pipeline.interfaces import Toolbox, ToolboxWrapper, call_key
from tools.evidence.registry import ALERTS
from tools.evidence.result import ToolResult


def slot_calls_run(
    asks: Sequence[Ask], *, toolbox: Toolbox, world: SlotWorld, prior: Sequence[ToolResult]
) -> list[ToolResult]:
    """The calls the asks need, in two turns (the alerts first: their `expr` names the series), each
    call once; a call an earlier round made is reused, not repeated. A tool no source serves is not
    called: its slot says the kind has no source (`SlotWorld.unconfigured`)."""
    earlier = {call_key(r.tool_name, r.arguments): r for r in prior}
    first = [(ALERTS.tool, alert_arguments(ask)) for ask in asks if KINDS[ask.kind].alerts_first(ask)]
    results = _turn(_served(first, world), toolbox, earlier)
    second = [
        call
        for ask in asks
        for call in KINDS[ask.kind].calls(ask, alerts=alerts_of(ask, results), world=world)
    ]
    return [*results, *_turn(_served(second, world), toolbox, earlier)]


def _served(calls: list[Call], world: SlotWorld) -> list[Call]:
    return [(tool, arguments) for tool, arguments in calls if tool in world.tools]


def plan_tools(asks: Sequence[Ask], results: Sequence[ToolResult]) -> list[str]:
    """The tools of the asks' calls that the plan holds. An action's calls (its subject's alerts, their
    runbook) serve the code-written answer only: an action is answered without findings about its
    subject, so they are not the executor's."""
    if only_actions(asks):
        return []
    return list(dict.fromkeys(r.tool_name for r in results))


def _turn(calls: list[Call], toolbox: Toolbox, earlier: dict[str, ToolResult]) -> list[ToolResult]:
    unique = {call_key(tool, arguments): (tool, arguments) for tool, arguments in calls}
    fresh = [call for key, call in unique.items() if key not in earlier]
    fresh = fresh[: max(0, toolbox.remaining_calls)]
    recorded = toolbox.call_many(fresh) if fresh else []
    by_key = {call_key(tool, arguments): r for (tool, arguments), r in zip(fresh, recorded, strict=True)}
    return [r for key in unique if (r := by_key.get(key) or earlier.get(key))]


class CallsReused(ToolboxWrapper):
    """The executor's toolbox over the asks' calls: a call code already made is answered with its
    recorded result, not made again (so one search is one invocation, whoever asked for it)."""

    def __init__(self, toolbox: Toolbox, results: Sequence[ToolResult]) -> None:
        super().__init__(toolbox)
        self._made = {call_key(r.tool_name, r.arguments): r for r in results}

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[ToolResult]:
        fresh = [call for call in calls if call_key(*call) not in self._made]
        recorded = iter(self._toolbox.call_many(fresh) if fresh else [])
        return [self._made.get(call_key(*call)) or next(recorded) for call in calls]
