"""The metric catalog (§22): what the metrics source holds, as it says it.

Every metric family with its TYPE, HELP and unit (Prometheus's `/api/v1/metadata`), the series names
it is written as (`x_bucket`, `x_sum`, `x_count` of a histogram; `x_total` of a counter), and the
values of the labels that name things (a database's `datname`, a probe's `instance`, a `handler`, a
`job`), each bounded. Metrics a source holds without metadata (recording rules) are kept as
`unknown`. Built where the inventory is built (`tools.sources.sources_catalog`), read by both engines
(`tools.metric_search`, `tools.metric_query`) and searched by the llm engine's `search_metrics`.

Django-free: the pipeline reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The most metric families kept (a large server holds tens of thousands); the rest are counted.
MAX_METRICS = 5000
# A label with more values than this names no one thing (ids, timestamps, ports): left out.
MAX_LABEL_VALUES = 300
# The most labels whose values are read.
MAX_LABELS = 100
# Labels that never name a thing: the metric's name, a histogram's buckets, a summary's quantiles.
STRUCTURAL_LABELS = frozenset({"__name__", "le", "quantile"})
# How a family's series are named after it, by TYPE (text format counters carry `_total` in the
# family name; OpenMetrics ones do not).
FAMILY_SUFFIXES: dict[str, tuple[str, ...]] = {
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
    "summary": ("_sum", "_count", "_created"),
    "counter": ("_total", "_created"),
    "info": ("_info",),
}
# What a metric measures, by the unit its metadata states or its name ends with (the Prometheus naming
# convention: base units, `_total` after the unit).
UNIT_SUFFIXES = {
    "seconds": "seconds",
    "milliseconds": "milliseconds",
    "bytes": "bytes",
    "ratio": "ratio",
    "percent": "percent",
    "celsius": "celsius",
}
NAME_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
HELP_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


class MetricEntry(BaseModel):
    """One metric family: its name, TYPE, HELP, unit and series names; label names and the values
    of those that name things when the source tells them with the catalog (the demo world's records),
    else asked per metric when a query needs them (`tools.series`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    type: str = "unknown"
    help: str = ""
    unit: str = ""
    series: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    values: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    def parts(self) -> list[str]:
        """The words of its name, lower case: `node_memory_MemAvailable_bytes` → node, memory, mem,
        available, bytes (snake_case parts, then CamelCase humps)."""
        words = []
        for chunk in self.name.split("_"):
            humps = NAME_PART.findall(chunk)
            words += [chunk.lower(), *(h.lower() for h in humps if len(humps) > 1)]
        return [word for word in words if word]

    def measured(self) -> str:
        """What its samples count in: `seconds`, `bytes`, `ratio`, `percent`… from the metadata's unit,
        else its name's last unit part (`_seconds_total` → seconds); "" when it says none."""
        if self.unit:
            return UNIT_SUFFIXES.get(self.unit.lower(), self.unit.lower())
        parts = [part.lower() for part in self.name.split("_")]
        if parts and parts[-1] in ("total", "count", "sum", "bucket"):
            parts = parts[:-1]
        return UNIT_SUFFIXES.get(parts[-1], "") if parts else ""

    def series_ending(self, suffix: str) -> str | None:
        """Its series with that ending (`_bucket`), None when the source holds no such series."""
        wanted = f"{self.name}{suffix}"
        return wanted if wanted in self.series else None

    def sampled(self) -> str:
        """The series a plain read of it queries: a counter's `_total` (or itself), a gauge itself, a
        histogram's or summary's `_count`."""
        if self.name in self.series or not self.series:
            return self.name
        for suffix in ("_total", "_count"):
            if found := self.series_ending(suffix):
                return found
        return self.series[0]

    def described(self) -> dict[str, Any]:
        """What `search_metrics` shows of it."""
        shown: dict[str, Any] = {"name": self.name, "type": self.type, "help": self.help}
        if self.measured():
            shown["unit"] = self.measured()
        if self.series and tuple(self.series) != (self.name,):
            shown["series"] = list(self.series)
        if self.labels:
            shown["labels"] = list(self.labels)
        return shown


class MetricCatalog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: tuple[MetricEntry, ...] = ()
    # Label → its values over every series, for the labels that name things (bounded).
    values: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # Families past MAX_METRICS, and labels left out for holding more than MAX_LABEL_VALUES values.
    metrics_left_out: int = 0
    crowded_labels: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.metrics

    def entry(self, name: str) -> MetricEntry | None:
        """The family a metric or series name belongs to (`x_bucket` → x)."""
        return self._by_series.get(name) or self._by_name.get(name)

    def says(self, word: str) -> bool:
        """Whether a metric's name or HELP has the word, any case: a name the source's own metrics use
        (`PostgreSQL` in the HELP of postgres_exporter's metrics)."""
        return word.lower() in self._words

    def labels_with(self, value: str) -> list[str]:
        """The labels holding that value on some series, in the catalog's order."""
        return [label for label, values in self.values.items() if value in values]

    @cached_property
    def _words(self) -> frozenset[str]:
        found: set[str] = set()
        for entry in self.metrics:
            found.update(entry.parts())
            found.update(word.lower() for word in HELP_WORD.findall(entry.help))
        return frozenset(found)

    @cached_property
    def _by_name(self) -> dict[str, MetricEntry]:
        return {entry.name: entry for entry in self.metrics}

    @cached_property
    def _by_series(self) -> dict[str, MetricEntry]:
        return {series: entry for entry in self.metrics for series in entry.series}


def catalog_from_metadata(
    *,
    metadata: Mapping[str, list[dict]],
    names: Iterable[str],
    values: Mapping[str, Iterable[str]],
) -> MetricCatalog:
    """The catalog of a Prometheus server: its `/api/v1/metadata` (family → [{type, help, unit}]),
    its series names (`__name__` values) and the values of its labels. A series name joins the family
    it is written after; one no metadata describes is a family of its own, `unknown`."""
    families: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names)):
        family = family_of(name, metadata)
        described = (metadata.get(family) or [{}])[0]
        entry = families.setdefault(
            family,
            {
                "name": family,
                "type": str(described.get("type") or "unknown"),
                "help": str(described.get("help") or ""),
                "unit": str(described.get("unit") or ""),
                "series": [],
            },
        )
        entry["series"].append(name)
    kept = list(families.values())[:MAX_METRICS]
    return MetricCatalog(
        metrics=tuple(MetricEntry(**{**entry, "series": tuple(entry["series"])}) for entry in kept),
        metrics_left_out=max(0, len(families) - MAX_METRICS),
        **_naming_values(values),
    )


def family_of(series: str, metadata: Mapping[str, list[dict]]) -> str:
    """The family a series name is written after: itself when the metadata names it, else the name
    without the suffix its TYPE adds (`x_bucket` of the histogram x, `x_total` of the counter x)."""
    if series in metadata:
        return series
    for kind, suffixes in FAMILY_SUFFIXES.items():
        for suffix in suffixes:
            base = series.removesuffix(suffix)
            if base != series and any(m.get("type") == kind for m in metadata.get(base) or []):
                return base
    return series


def catalog_from_records(records: Iterable[Mapping[str, Any]], *, labels: tuple[str, ...]) -> MetricCatalog:
    """The catalog of a world that writes its samples in records (the demo world's log lines:
    `metrics: {name: value}` beside the record's `service` and `instance`): each name a gauge on those
    labels, its HELP the text of the first record that carries it."""
    entries: dict[str, dict[str, Any]] = {}
    for record in records:
        for name in record.get("metrics") or {}:
            entry = entries.setdefault(
                name,
                {"help": str(record.get("message") or ""), "values": {label: [] for label in labels}},
            )
            for label in labels:
                value = record.get(label)
                if value and value not in entry["values"][label]:
                    entry["values"][label].append(str(value))
    metrics = tuple(
        MetricEntry(
            name=name,
            type="gauge",
            help=entry["help"],
            series=(name,),
            labels=labels,
            values={label: tuple(found) for label, found in entry["values"].items() if found},
        )
        for name, entry in sorted(entries.items())
    )
    united: dict[str, list[str]] = {}
    for entry in metrics:
        for label, found in entry.values.items():
            united.setdefault(label, [])
            united[label] += [value for value in found if value not in united[label]]
    return MetricCatalog(metrics=metrics, **_naming_values(united))


def _naming_values(values: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """The values of the labels that name things, and the labels left out for holding too many."""
    named: dict[str, tuple[str, ...]] = {}
    crowded: list[str] = []
    for label in list(values)[:MAX_LABELS]:
        if label in STRUCTURAL_LABELS:
            continue
        found = tuple(dict.fromkeys(str(value) for value in values[label]))
        if len(found) > MAX_LABEL_VALUES:
            crowded.append(label)
        elif found:
            named[label] = found
    return {"values": named, "crowded_labels": tuple(crowded)}


def catalogs_united(first: MetricCatalog, second: MetricCatalog) -> MetricCatalog:
    """Two catalogs as one (a case's records beside the demo world's): the first's entry of a name wins."""
    known = {entry.name for entry in first.metrics}
    values = {label: list(found) for label, found in first.values.items()}
    for label, found in second.values.items():
        values.setdefault(label, [])
        values[label] += [value for value in found if value not in values[label]]
    return MetricCatalog(
        metrics=(*first.metrics, *(entry for entry in second.metrics if entry.name not in known)),
        values={label: tuple(found) for label, found in values.items()},
        metrics_left_out=first.metrics_left_out + second.metrics_left_out,
        crowded_labels=tuple(dict.fromkeys([*first.crowded_labels, *second.crowded_labels])),
    )
