"""The typed records the evidence tools return, one class per kind, each writing its own reference text.

A record is read from the JSON a source answered (and a recorded call stored) and written back to the
same JSON (`stored()`), key for key: raw paths such as `$.alerts[0]` and recorded sessions keep
pointing where they did. What only one source knows (an alert's `expr`, a log line's `instance`) is kept
as an extra field. `ref_text()` is the evidence text a claim quotes; nothing parses it back, a reader
reads the fields. Django-free: the pipeline reads these records.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict

from tools.numbers import finite_number, number_text, series_name


class EvidenceRecord(BaseModel):
    # Extra fields are what one source adds; they round-trip into the stored JSON.
    model_config = ConfigDict(extra="allow")

    def ref_text(self) -> str:
        """The text of the evidence ref that cites this record."""
        raise NotImplementedError

    def stored(self) -> dict[str, Any]:
        """The record as the tool's output stores it: the keys it was read from, no defaults added."""
        return self.model_dump(mode="json", exclude_unset=True)


class AlertRecord(EvidenceRecord):
    alert_name: str = ""
    service: str = ""
    state: str = ""
    severity: str = ""
    description: str = ""
    active_at: str = ""
    duration: str = ""
    labels: dict[str, Any] = {}
    value: Any = None
    annotations: dict[str, Any] = {}
    # The rule's expression (Prometheus) and the threshold a source states (the demo world).
    expr: str = ""
    threshold: Any = None
    # Alertmanager's id of the alert's group: a flapping group is marked by it.
    fingerprint: str = ""

    def ref_text(self) -> str:
        text = (
            f"{self.alert_name} {self.state} service={self.service}: "
            f"{self.description} duration={self.duration}"
        )
        # A number in an answer must come from a sample, not only from an annotation someone typed.
        if self.value not in (None, "") and str(self.value) not in self.description:
            text += f" 当前值 {number_text(str(self.value))}"
        return text


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


class TargetRecord(EvidenceRecord):
    job: str = ""
    instance: str = ""
    health: str = ""
    last_error: str = ""
    last_scrape: str = ""
    scrape_url: str = ""
    labels: dict[str, Any] = {}

    def ref_text(self) -> str:
        text = f'job="{self.job}" instance="{self.instance}" health={self.health}'
        if self.last_error:
            text += f" lastError: {self.last_error}"
        return text


class LogLine(EvidenceRecord):
    timestamp: str = ""
    level: str = ""
    service: str = ""
    message: str = ""
    labels: dict[str, Any] = {}

    def ref_text(self) -> str:
        return f"[{self.timestamp}][{self.level}][{self.service}] {self.message}"


class RunbookSection(EvidenceRecord):
    """A knowledge block (a runbook's section or a past case) as `lookup_knowledge` ranked it."""

    block_id: str = ""
    source_document: str = ""
    title: str = ""
    section: str = ""
    content: str = ""
    retrieval_layer: str = ""
    relevance: str = ""
    score: Any = None
    matched_terms: list[str] = []
    # Returned earlier in the session: not new evidence, so no ref cites it.
    deduped: bool = False

    def ref_text(self) -> str:
        return f"{self.title}（{self.source_document}）: {self.content}"
