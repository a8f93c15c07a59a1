"""Which label carries a subject in a metric's series, as the metrics source has them:
`billing` may be a `service` on one metric and a `job` on another, and a node_exporter series has no
`service` label at all. A query never adds a matcher its series lack, so code asks the source.

One `SeriesLabels` lives for one session: each metric's label names and each label's values on it are
asked once (`/api/v1/labels?match[]=`, `/api/v1/label/<l>/values?match[]=`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from tools.sources.http import SourceError

logger = logging.getLogger(__name__)

# Labels that name a subject besides the configured service labels, in this order.
SUBJECT_LABELS = ("instance", "job", "namespace", "pod", "container")


class SeriesLabels:
    def __init__(self, source: Any, *, service_labels: Iterable[str], metrics: Iterable[str]) -> None:
        self._source = source
        self._candidates = tuple(dict.fromkeys([*service_labels, *SUBJECT_LABELS]))
        self._metrics = frozenset(metrics)
        self._names: dict[str, frozenset[str]] = {}
        self._values: dict[tuple[str, str], frozenset[str]] = {}

    def known(self, metric: str) -> bool:
        return metric in self._metrics

    def carrier(self, metric: str, subject: str) -> str | None:
        """The first label of the metric's series with the subject among its values: the subject labels
        first, then the others (a mount point "/" is a `mountpoint`)."""
        if not self.known(metric):
            return None
        try:
            names = self._label_names(metric)
            others = sorted(names - {*self._candidates, "__name__"})
            ordered = [*(label for label in self._candidates if label in names), *others]
            return next((label for label in ordered if subject in self._on(metric, label)), None)
        except SourceError:  # the query itself will fail and say so; here the subject is just not found
            logger.warning("labels of %s unknown: the source failed", metric, exc_info=True)
            return None

    def label_names(self, metric: str) -> frozenset[str]:
        """The label names of the metric's series; none when the source cannot say."""
        if not self.known(metric):
            return frozenset()
        try:
            return self._label_names(metric)
        except SourceError:  # the query itself will fail and say so
            logger.warning("labels of %s unknown: the source failed", metric, exc_info=True)
            return frozenset()

    def _label_names(self, metric: str) -> frozenset[str]:
        if metric not in self._names:
            self._names[metric] = frozenset(self._source.label_names(match=metric))
        return self._names[metric]

    def _on(self, metric: str, label: str) -> frozenset[str]:
        if (metric, label) not in self._values:
            self._values[metric, label] = frozenset(self._source.label_values(label, match=metric))
        return self._values[metric, label]
