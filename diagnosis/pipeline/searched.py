"""What was searched and came back empty (an answer names what it searched; issue: the llm
path's gaps). A call that found nothing or failed, and that neither a kept claim nor a filled slot
cites, is one gap line naming the call and its source, whichever engine made it: an executor that
stated nothing still tells the user where it looked. Pure code over the round's tool results.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from diagnosis.pipeline.contracts import ExecutorOutput
from diagnosis.pipeline.slot import Slot
from tools.evidence.registry import kind_named, tool_label
from tools.evidence.result import NO_EVIDENCE, ToolResult
from tools.source_names import source_name


def searched_gaps(*, results: Sequence[ToolResult], output: ExecutorOutput, slots: Iterable[Slot]) -> list[str]:
    cited = {
        str(binding.source_invocation_id)
        for claim in output.claims
        for binding in claim.evidence_bindings
        if binding.source_invocation_id is not None
    } | {str(binding.source_invocation_id) for slot in slots if slot.filled for binding in slot.bindings}
    lines = [
        line
        for result in results
        if str(result.invocation_id) not in cited and (line := _searched_line(result))
    ]
    return list(dict.fromkeys(lines))


def unconfigured_gaps(*, planned: Iterable[str], tools: frozenset[str], slots: Iterable[Slot]) -> list[str]:
    """A kind the plan wanted that no source serves (logs with Prometheus alone configured), said
    once: `未配置日志源：未查询日志`; a slot that already says so is enough."""
    said = [slot.why for slot in slots if not slot.filled]
    lines = []
    for tool in dict.fromkeys(planned):
        kind = kind_named(tool)
        if kind is None or tool in tools or not kind.unconfigured:
            continue
        if not any(kind.unconfigured in why for why in said):
            lines.append(f"{kind.unconfigured}：未查询{kind.noun}")
    return lines


def _searched_line(result: ToolResult) -> str:
    if not result.success:
        source = f"，来源 {source_name(result.source)}" if result.source else ""
        return f"{tool_label(result.tool_name)}（{_arguments(result)}{source}）调用失败，未获得证据"
    if result.evidence_status == NO_EVIDENCE:
        # The no-hit ref's text already names the call and its source (`在 日志查询（…，来源 Loki）中…`).
        no_hit = result.no_hit()
        return no_hit.text if no_hit else ""
    return ""


def _arguments(result: ToolResult) -> str:
    return "，".join(f"{key}={value}" for key, value in result.arguments.items()) or "无参数"
