"""An alert as a source answered it; its ref text names the alert, its state and its current value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tools.evidence.record import EvidenceRecord
from tools.evidence.summary import SAMPLE_CHARS, bounded, clip
from tools.numbers import number_text

# Labels that say what an alert is, not what it is about.
NOT_ITS_SUBJECT = frozenset({"alertname", "alertstate", "severity"})


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

    def subject(self) -> str:
        """What the alert is about: its service, else the labels its rule kept (`datname=shop` of a
        rule aggregated by database), else empty."""
        if self.service:
            return self.service
        kept = (
            f"{name}={value}" for name, value in sorted(self.labels.items()) if name not in NOT_ITS_SUBJECT
        )
        return ",".join(kept)

    def identity(self) -> str:
        labels = ",".join(f'{name}="{value}"' for name, value in sorted(self.labels.items()))
        return f"{self.alert_name}{{{labels}}}"

    def ref_text(self) -> str:
        text = (
            f"{self.alert_name} {self.state} service={self.service}: "
            f"{self.description} duration={self.duration}"
        )
        # A number in an answer must come from a sample, not only from an annotation someone typed.
        if self.value not in (None, "") and str(self.value) not in self.description:
            text += f" 当前值 {number_text(str(self.value))}"
        return text

    @classmethod
    def summary(cls, records: Sequence[AlertRecord], *, budget: int) -> str:
        lines = dict.fromkeys(
            f"{a.alert_name} {a.state} service={a.service} duration={a.duration}: "
            + clip(a.description, SAMPLE_CHARS)
            for a in records
        )
        return bounded("metric_evidence: ", list(lines), budget, "条告警")
