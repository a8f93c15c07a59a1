"""A tool call's output within bounds, whatever its source answered (CONTRACTS §24).

A source may answer a query with millions of samples or a log line of megabytes; what a call stores
and hands on is its first records (series, log lines, alerts, …), each series' latest points and every
string up to a length, the whole within the bytes of its stored JSON. A cut output says so:
`truncated: true` and the total of its records before the cut (`total_series`, `total_lines`); a
series whose points were cut carries its own `total_points`. A source may bound its answer already
while parsing it (`SeriesKept`) and say the total it saw.

What is kept is always a prefix of the records, so each kept record's raw_path (`$.series[3]`) is the
one it had in the source's answer and the evidence refs extracted from the kept output cite it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings

# A string longer than this (a log line, a label value, a description) keeps its start and the mark.
STRING_CHARS = 8000
CUT_MARK = "…"
# Said after the tool's own message when its output was cut.
TRUNCATION_SENTENCE = "；输出超出上限"
# Room left in the byte budget for the truncation keys and the message's added sentence.
TRUNCATION_NOTE_BYTES = 400


@dataclass(frozen=True)
class OutputBounds:
    series: int
    points: int
    lines: int
    # Alerts, targets, knowledge blocks: any other kind of record.
    records: int
    bytes: int

    @classmethod
    def configured(cls) -> OutputBounds:
        config = settings.DIAGNOSIS
        return cls(
            series=config["OUTPUT_MAX_SERIES"],
            points=config["OUTPUT_MAX_POINTS"],
            lines=config["OUTPUT_MAX_LINES"],
            records=config["OUTPUT_MAX_RECORDS"],
            bytes=config["OUTPUT_MAX_BYTES"],
        )

    def records_of(self, noun: str) -> int:
        """How many records of this kind an output keeps."""
        return {"series": self.series, "lines": self.lines}.get(noun, self.records)


class SeriesKept:
    """A JSON object hook that bounds a PromQL answer while it is parsed: the first `bounds.series`
    series, each with its latest `bounds.points` points; a later series is parsed and dropped at once
    (None in its place), so a huge answer never lives whole in memory. `total` counts every series."""

    def __init__(self, bounds: OutputBounds) -> None:
        self.bounds = bounds
        self.total = 0

    def __call__(self, value: dict[str, Any]) -> dict[str, Any] | None:
        if not _is_series(value):
            return value
        self.total += 1
        if self.total > self.bounds.series:
            return None
        return _record_bounded(value, series=True, points=self.bounds.points)


def _is_series(value: dict[str, Any]) -> bool:
    """An entry of a query's `result`: its labels under `metric` and its sample(s) beside them."""
    return isinstance(value.get("metric"), dict) and any(
        name in value for name in ("value", "values", "histogram", "histograms")
    )


def stored_bytes(value: Any) -> int:
    """The bytes of a value's JSON as the database stores it (Django's JSONField: ASCII escapes)."""
    return len(json.dumps(value, default=str))


def output_bounded(output: dict[str, Any], *, key: str, noun: str, bounds: OutputBounds) -> dict[str, Any]:
    """The output with its `key` records within `bounds`, marked `truncated` with `total_<noun>` when
    anything was cut; an output within them comes back as it is."""
    records = output.get(key)
    if not isinstance(records, list):
        return output
    total_key = f"total_{noun}"
    # Bounded again (a trace read under smaller bounds): the total is still the source's.
    total = output[total_key] if isinstance(output.get(total_key), int) else len(records)
    kept = [
        _record_bounded(record, series=key == "series", points=bounds.points)
        for record in records[: bounds.records_of(noun)]
    ]
    cut = (
        len(kept) < total
        or any(new is not old for new, old in zip(kept, records, strict=False))
        # A series whose points its source's parse already cut (`SeriesKept`).
        or any(isinstance(record, dict) and "total_points" in record for record in kept)
    )
    rest = {name: value for name, value in output.items() if name != key}
    budget = bounds.bytes - stored_bytes({**rest, key: []}) - TRUNCATION_NOTE_BYTES
    used = 0
    for index, record in enumerate(kept):
        used += stored_bytes(record) + 2
        if used > budget:
            kept, cut = kept[:index], True
            break
    if not cut:
        return output
    bounded = {**rest, key: kept, "truncated": True, total_key: total}
    if isinstance(output.get("message"), str):
        said = output["message"].split(TRUNCATION_SENTENCE)[0]
        bounded["message"] = f"{said}{TRUNCATION_SENTENCE}，保留前 {len(kept)} 条（共 {total} 条）"
    return bounded


def _record_bounded(record: Any, *, series: bool, points: int) -> Any:
    """The record with its long strings cut and, for a series, its latest `points` points; the record
    itself (the same object) when nothing needed cutting."""
    values = record.get("values") if series and isinstance(record, dict) else None
    if isinstance(values, list) and len(values) > points:
        record = {**record, "values": values[len(values) - points :], "total_points": len(values)}
    return _strings_cut(record)


def _strings_cut(value: Any) -> Any:
    if isinstance(value, str):
        return value[:STRING_CHARS] + CUT_MARK if len(value) > STRING_CHARS else value
    if isinstance(value, dict):
        items = {name: _strings_cut(item) for name, item in value.items()}
        return value if all(items[name] is value[name] for name in value) else items
    if isinstance(value, list):
        items = [_strings_cut(item) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value
