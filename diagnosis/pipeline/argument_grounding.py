"""Tool arguments grounded in the inventory: a service or alert name in an
executor's call that the sources do not know is resolved by code to the known name it matches
tolerantly (case, separators, CamelCase humps, the vocabulary's aliases: `CartApi` → `cart-api`);
with no match the call reaches no source and its result lists the nearest known names, so the
caller can call again. A name the question itself asked about is searched as written (the answer
then says it is unknown). Whichever engine calls: code never grounds differently for one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from diagnosis.pipeline.focus import Inventory, folded_name, name_pattern
from diagnosis.pipeline.interfaces import Toolbox, ToolboxWrapper
from tools.evidence.result import ToolResult, not_run

# Argument → the inventory's kind of name it carries.
NAMED_ARGUMENTS = {"service": "service", "alert_name": "alert"}
KIND_LABELS = {"service": "服务", "alert": "告警"}
# Known names listed in a tool's parameter description: enough to choose from, bounded for the prompt.
LISTED_NAMES = 20
UNKNOWN_NAME_ERROR = (
    "数据源中没有名为 {name} 的{kind}，未执行查询；最接近的已知名称：{nearest}。请使用已知名称重新调用"
)
NO_NEAREST = "无"


@dataclass(frozen=True)
class Grounding:
    arguments: dict
    # Argument → {"asked": the caller's name, "known": the inventory's}.
    resolved: dict[str, dict[str, str]] = field(default_factory=dict)
    # The first name nothing known matches: (argument, name, nearest known names).
    unknown: tuple[str, str, list[str]] | None = None


def arguments_grounded(arguments: dict, *, inventory: Inventory, asked: Iterable[str] = ()) -> Grounding:
    grounded, resolved = dict(arguments), {}
    asked_folded = {folded_name(name) for name in asked}
    for argument, kind in NAMED_ARGUMENTS.items():
        value = arguments.get(argument)
        known = inventory.services if kind == "service" else inventory.alerts
        if not isinstance(value, str) or not value.strip() or not known or value in known:
            continue
        if folded_name(value) in asked_folded:
            continue
        match = _tolerant_match(value.strip(), kind=kind, inventory=inventory)
        if match is None:
            return Grounding(arguments, unknown=(argument, value, inventory.nearest(value, kind=kind)))
        grounded[argument] = match
        resolved[argument] = {"asked": value, "known": match}
    return Grounding(grounded, resolved)


def _tolerant_match(value: str, *, kind: str, inventory: Inventory) -> str | None:
    """The one known name that reads as the whole of `value`, in any of its shapes or aliases."""
    known = inventory.services if kind == "service" else inventory.alerts
    aliases = dict(inventory.aliases) if kind == "service" else {}
    matches = [
        name
        for name in sorted(known)
        if folded_name(name) == folded_name(value)
        or name_pattern(name).fullmatch(value.lower())
        or any(folded_name(alias) == folded_name(value) for alias in aliases.get(name, ()))
    ]
    return matches[0] if len(matches) == 1 else None


class NamesGrounded(ToolboxWrapper):
    """The executor's toolbox with its calls' names grounded in the inventory, and the known names in
    the tool descriptions it offers."""

    def __init__(self, toolbox: Toolbox, *, inventory: Inventory, asked: Iterable[str]) -> None:
        super().__init__(toolbox)
        self._inventory = inventory
        self._asked = tuple(asked)

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[ToolResult]:
        groundings = [
            arguments_grounded(args, inventory=self._inventory, asked=self._asked) for _, args in calls
        ]
        runnable = [
            (tool, g.arguments) for (tool, _), g in zip(calls, groundings, strict=True) if g.unknown is None
        ]
        recorded = iter(self._toolbox.call_many(runnable) if runnable else [])
        results = []
        for (tool, _), grounding in zip(calls, groundings, strict=True):
            if grounding.unknown is not None:
                results.append(_unknown_result(tool, *grounding.unknown))
                continue
            result = next(recorded)
            results.append(
                result.model_copy(update={"resolved_names": grounding.resolved})
                if grounding.resolved
                else result
            )
        return results

    def tool_definitions(self) -> list[dict]:
        definitions = copy.deepcopy(self._toolbox.tool_definitions())
        for definition in definitions:
            properties = definition.get("function", {}).get("parameters", {}).get("properties", {})
            for argument, kind in NAMED_ARGUMENTS.items():
                known = sorted(self._inventory.services if kind == "service" else self._inventory.alerts)
                if argument in properties and known:
                    listed = "、".join(known[:LISTED_NAMES]) + ("等" if len(known) > LISTED_NAMES else "")
                    described = properties[argument].get("description", "")
                    properties[argument]["description"] = f"{described}（已知：{listed}）".lstrip()
        return definitions


def _unknown_result(tool_name: str, argument: str, name: str, nearest: list[str]) -> ToolResult:
    kind = KIND_LABELS[NAMED_ARGUMENTS[argument]]
    error = UNKNOWN_NAME_ERROR.format(name=name, kind=kind, nearest="、".join(nearest) or NO_NEAREST)
    return not_run(tool_name, error=error, nearest_names=nearest)
