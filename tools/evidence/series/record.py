"""One series of a PromQL answer; its ref text says its latest sample and, over a range, its bounds."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from tools.evidence.record import EvidenceRecord
from tools.numbers import finite_number, number_text, series_name


class SeriesRecord(EvidenceRecord):
    """One series of a PromQL answer: an instant sample (`value`, `[ts, "v"]`) or a range (`values`)."""

    metric: dict[str, Any] = {}
    value: Any = None
    values: list[Any] | None = None

    @property
    def instant(self) -> bool:
        return "value" in self.model_fields_set

    def sample(self) -> tuple[object, object]:
        """(time, value) of an instant sample: Prometheus writes `[ts, "v"]`; a bare value has no time."""
        if isinstance(self.value, list | tuple) and len(self.value) == 2:
            return self.value[0], self.value[1]
        return None, self.value

    def name(self) -> str:
        return series_name(self.metric or {})

    def named_values(self) -> set[Decimal]:
        """The values its ref text names: an instant sample, or a range's latest, lowest and highest."""
        if self.instant:
            named = [finite_number(self.sample()[1])]
        else:
            values = [finite_number(pair[1]) for pair in self.values or [] if _is_pair(pair)]
            finite = [value for value in values if value is not None]
            named = values[-1:] + ([min(finite), max(finite)] if len(finite) > 1 else [])
        return {value for value in named if value is not None}

    def ref_text(self) -> str:
        return f"{self.name()} {self._samples_text()}"

    def identity(self) -> str:
        return self.name()

    def _samples_text(self) -> str:
        if self.instant:
            at, value = _point(self.value)
            return f"当前值 {number_text(value)}（{at}）"
        points = [_point(pair) for pair in self.values or []]
        if not points:
            return "区间内无采样"
        at, latest = points[-1]
        text = f"最新值 {number_text(latest)}（{at}）"
        finite = [number for _, value in points if (number := finite_number(value)) is not None]
        if len(finite) > 1:
            text += f"，区间最小 {_said(min(finite))}，最大 {_said(max(finite))}"
        return text


def _said(number: Decimal) -> str:
    return number_text(str(number))


def _is_pair(pair: Any) -> bool:
    return isinstance(pair, list | tuple) and len(pair) == 2


def _point(pair: Any) -> tuple[str, str]:
    # The process runs in TIME_ZONE (Django sets TZ from it), so a local time is the tools' local time.
    timestamp, value = pair
    return datetime.fromtimestamp(float(timestamp)).strftime("%H:%M:%S"), str(value)
