"""A recorded session's calls asked again of today's sources (`manage.py replay`).

Each call runs as the recorder ran it (`tool_answer`), at its receipt's time, so it sends the same
query over the same time range; its new receipt and output are compared with the recorded ones and
dropped. Nothing is written: not into the session, not anywhere.

Per call: `same` (the same requests to the same source, the same output hash), `changed` (what differs:
the source or a request, then the records that appeared, went or changed and the other fields of the
output, bounded), or `failed` (the call fails today, or it has no receipt to replay).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.services.invocations import CALLER_WRITTEN_KINDS, blocks_seen, tool_answer
from tools.evidence.kind import EvidenceKind
from tools.evidence.receipt import Receipt, output_digest
from tools.evidence.record import EvidenceRecord
from tools.evidence.registry import kind_named
from tools.evidence.result import ToolResult

SAME, CHANGED, FAILED = "same", "changed", "failed"
# What a changed call lists: the first differences, each cut to a line a terminal shows.
MAX_DIFFERENCES = 10
DIFFERENCE_CHARS = 300
NO_RECEIPT = "没有证据回执（记录于回执功能之前），无法按原请求重放"


@dataclass(frozen=True)
class InvocationReplay:
    invocation: ToolInvocation
    status: str
    # changed: what differs, in words; failed: why.
    differences: list[str]


def session_replay(*, session: DiagnosisSession) -> list[InvocationReplay]:
    """Every call of the session, in the order recorded, asked again and compared."""
    invocations = list(session.tool_invocations.all())
    return [
        invocation_replay(session=session, invocation=invocation, earlier=invocations[:index])
        for index, invocation in enumerate(invocations)
    ]


def invocation_replay(
    *, session: DiagnosisSession, invocation: ToolInvocation, earlier: list[ToolInvocation]
) -> InvocationReplay:
    """One call asked again at its receipt's time; `earlier`: the session's calls before it (a runbook
    lookup dedups against their blocks, as it did)."""
    receipt = invocation.receipt_record
    if receipt is None:
        return InvocationReplay(invocation, FAILED, [NO_RECEIPT])
    answer = tool_answer(
        tool_name=invocation.tool_name,
        arguments=invocation.input,
        now=receipt.evaluated_at,
        caller_written=session.kind in CALLER_WRITTEN_KINDS,
        seen_block_ids=lambda: blocks_seen(session, invocation.tool_name, [], earlier),
    )
    if answer.error:
        return InvocationReplay(invocation, FAILED, [answer.error])
    differences = request_differences(recorded=receipt, replayed=answer.receipt)
    if answer.receipt.output_sha256 != receipt.output_sha256:
        kind = kind_named(invocation.tool_name)
        differences += output_differences(recorded=invocation.output, replayed=answer.output, kind=kind)
        if invocation.output == answer.output:
            # The stored output is what came back today, yet not what its receipt hashed.
            differences.append(
                f"记录的输出与回执的哈希不符（回执 {receipt.output_sha256}，记录 {output_digest(invocation.output)}）"
            )
    return InvocationReplay(invocation, CHANGED if differences else SAME, bounded(differences))


def request_differences(*, recorded: Receipt, replayed: Receipt) -> list[str]:
    """Where today's call went and what it sent, against the receipt: the source, then each request."""
    differences = []
    if (recorded.source, recorded.location) != (replayed.source, replayed.location):
        differences.append(
            f"来源：{recorded.source} {recorded.location} → {replayed.source} {replayed.location}".strip()
        )
    for number, (before, now) in enumerate(zip(recorded.requests, replayed.requests, strict=False), start=1):
        if before != now:
            differences.append(f"请求 {number}：{before.text()} → {now.text()}")
    differences += [f"不再发送：{request.text()}" for request in recorded.requests[len(replayed.requests) :]]
    differences += [f"新发送：{request.text()}" for request in replayed.requests[len(recorded.requests) :]]
    return differences


def output_differences(
    *, recorded: dict[str, Any], replayed: dict[str, Any], kind: EvidenceKind | None
) -> list[str]:
    """The records that went, appeared or changed (paired by their identity: a series by its labels),
    then the output's other fields that differ (`total`, `message`, `error`…)."""
    before = ToolResult.from_output(tool_name="", kind=kind, arguments={}, output=recorded)
    after = ToolResult.from_output(tool_name="", kind=kind, arguments={}, output=replayed)
    differences = records_differences(before.records, after.records)
    for name in dict.fromkeys([*before.details, *after.details]):
        if before.details.get(name) != after.details.get(name):
            differences.append(
                f"{name}：{_json(before.details.get(name))} → {_json(after.details.get(name))}"
            )
    return differences


def records_differences(recorded: list[EvidenceRecord], replayed: list[EvidenceRecord]) -> list[str]:
    before, after = _by_identity(recorded), _by_identity(replayed)
    differences = []
    for identity in dict.fromkeys([*before, *after]):
        olds, news = before.get(identity, []), after.get(identity, [])
        for old, new in zip(olds, news, strict=False):
            if old.stored() == new.stored():
                continue
            if old.ref_text() != new.ref_text():
                differences.append(f"变化：{old.ref_text()} → {new.ref_text()}")
            else:
                differences.append(f"变化：{identity}（{_first_difference('', old.stored(), new.stored())}）")
        differences += [f"消失：{old.ref_text()}" for old in olds[len(news) :]]
        differences += [f"新增：{new.ref_text()}" for new in news[len(olds) :]]
    if not differences and [r.stored() for r in recorded] != [r.stored() for r in replayed]:
        differences.append("记录相同，顺序不同")
    return differences


def bounded(differences: list[str]) -> list[str]:
    lines = [_clipped(line) for line in differences[:MAX_DIFFERENCES]]
    if len(differences) > MAX_DIFFERENCES:
        lines.append(f"另有 {len(differences) - MAX_DIFFERENCES} 处不同")
    return lines


def _by_identity(records: Iterable[EvidenceRecord]) -> dict[str, list[EvidenceRecord]]:
    grouped: dict[str, list[EvidenceRecord]] = {}
    for record in records:
        grouped.setdefault(record.identity(), []).append(record)
    return grouped


def _first_difference(path: str, old: Any, new: Any) -> str:
    """Where two JSON values first differ: `values[37][1]: "1" → "5"`."""
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            if a != b:
                return _first_difference(f"{path}[{index}]", a, b)
        return f"{path}：{len(old)} 项 → {len(new)} 项"
    if isinstance(old, dict) and isinstance(new, dict):
        for key in dict.fromkeys([*old, *new]):
            if old.get(key) != new.get(key):
                return _first_difference(f"{path}.{key}" if path else key, old.get(key), new.get(key))
    return f"{path}：{_json(old)} → {_json(new)}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _clipped(line: str) -> str:
    return line if len(line) <= DIFFERENCE_CHARS else line[: DIFFERENCE_CHARS - 1] + "…"
