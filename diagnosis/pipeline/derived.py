"""The gatekeeper's check of numbers computed from a cited range result (§23): each derived number of
a slot is computed again from the series its binding cites, in this session's recorded invocations,
and said again; it must be what the slot says, where the slot says it. Every other number, time and
name of the slot's text must be in the text of the evidence it cites.
"""

from __future__ import annotations

from collections.abc import Sequence

from diagnosis.pipeline.facts import NO_NAMES, FactNames, unsupported_facts
from diagnosis.pipeline.investigation.change import series_points, window_median
from diagnosis.pipeline.investigation.records import alert_started
from diagnosis.pipeline.investigation.said import time_said, value_said
from diagnosis.pipeline.slot import DerivedNumber, Slot
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.result import ToolResult
from tools.evidence.series.record import SeriesRecord
from tools.evidence.trace_calls.record import TraceCallsRecord
from tools.evidence.trace_paths.record import TracePathsRecord


def derived_failures(
    slot: Slot, *, invocations: Sequence[ToolResult], names: FactNames = NO_NAMES
) -> list[str]:
    """Why the slot's derived numbers do not hold (empty when they all do)."""
    failures = []
    for number in slot.derived:
        again = _computed_again(number, invocations)
        if again is None:
            failures.append(f"{number.said}：引用的区间结果中没有可计算的采样")
        elif again != number.said:
            failures.append(f"{number.said}：按引用的区间结果重算为 {again}")
        elif number.said not in slot.conclusion:
            failures.append(f"{number.said}：不在结论中")
    if (slot.derived or slot.inference) and not failures:
        evidence = [binding.evidence_excerpt for binding in slot.bindings] + [n.said for n in slot.derived]
        # A long pattern's or operation's name is said by its head, cut at an ellipsis.
        missing = unsupported_facts(slot.conclusion, evidence, truncation_tolerant=True, names=names)
        failures += [f"{token}：不在引用的证据或重算的数中" for token in missing]
    return failures


def _computed_again(number: DerivedNumber, invocations: Sequence[ToolResult]) -> str | None:
    binding = number.binding
    result = next((r for r in invocations if r.invocation_id == binding.source_invocation_id), None)
    record = result.record_at(binding.raw_path) if result is not None else None
    if number.statistic == "alert_start":
        started = alert_started(record) if isinstance(record, AlertRecord) else None
        return time_said(started) if started is not None else None
    if isinstance(record, TraceCallsRecord | TracePathsRecord):
        return _calls_computed_again(number, record)
    if not isinstance(record, SeriesRecord) or record.instant:
        return None
    points = series_points(record)
    if number.statistic == "sample_time":
        return time_said(number.start) if any(at == number.start for at, _ in points) else None
    value = window_median(points, start=number.start, end=number.end, closed=number.closed)
    return value_said(value, number.unit) if value is not None else None


def _calls_computed_again(number: DerivedNumber, record: TraceCallsRecord | TracePathsRecord) -> str | None:
    """A share of an operation's spans (or of the traces that took a step) in its windows, or the start
    of one of its windows."""
    if number.statistic == "sample_time":
        return time_said(number.start) if any(w.began == number.start for w in record.windows) else None
    if number.statistic != "call_share":
        return None
    share = record.share(number.calls, start=number.start, end=number.end, given=number.given)
    return value_said(share[0], number.unit) if share is not None else None
