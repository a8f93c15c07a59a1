"""The quantity a question's words ask of the metric catalog (§22), for the `value` and `trend` asks:
read once with the question (`measure_asked`), carried on the ask as the PromQL code built
(`Ask.quantity`), and said in the conclusion with its unit and its subject's plain name
(`measure_lines`) instead of the series' label dump.

A question that names an alert asks about the alert's own series; one that writes a gauge's name is
queried by that name as before. Otherwise its words are matched to the catalog (`tools.metric_search`)
and queried by type (`tools.metric_query`); words that name nothing in the catalog are carried on the
ask (`Ask.unnamed`), so its slot says so rather than answering with another metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal

from diagnosis.pipeline.asks.shared import Found, decimal_of
from tools.evidence.series.record import SeriesRecord
from tools.metric_catalog import MetricCatalog
from tools.metric_query import PLAIN_NAME_LABELS, Measure, MeasureGap, measure_built
from tools.metric_search import metrics_searched
from tools.promql import Carrier, LabelNames
from tools.vocabulary import Vocabulary

# Types whose raw samples answer nothing by themselves: a counter's total, a histogram's buckets.
COMPUTED_TYPES = frozenset({"counter", "histogram", "summary"})


@dataclass(frozen=True)
class MetricWords:
    """What reading a question's metric words needs: the catalog, the series' labels as the source
    has them, and the names the inventory knows (never words that name nothing)."""

    metric_catalog: MetricCatalog
    vocabulary: Vocabulary
    carrier: Carrier | None = None
    label_names: LabelNames | None = None
    known_names: frozenset[str] = frozenset()
    # A series source answers PromQL: without one (the demo world), a measure is never queried and
    # the catalog only says which words name nothing in it.
    queried: bool = True


@dataclass(frozen=True)
class Asked:
    """What the words ask: the measure built, or why none is (the words name nothing); `computes`
    when they ask a computation (a rate, a quantile, a ratio, an increase)."""

    quantity: Measure | None = None
    unnamed: str = ""
    computes: bool = False
    increase: bool = False


def measure_asked(
    text: str, *, words: MetricWords | None, series: Sequence[str], window_minutes: int, alerts_named: bool
) -> Asked:
    """The measure of a question: of the metric it writes when that one needs computing (a counter, a
    histogram) or when it asks a computation, else of its words; nothing when it names an alert (its
    own series answer) or the catalog is empty."""
    if words is None or words.metric_catalog.empty or alerts_named:
        return Asked()
    held = words.metric_catalog
    found = metrics_searched(
        text, metric_catalog=held, vocabulary=words.vocabulary, known_names=words.known_names
    )
    reading = found.reading
    named = next((held_name for name in series if (held_name := _held_name(held, name))), "")
    if series and not named:
        return Asked()
    if named and not (reading.computes or held.entry(named).type in COMPUTED_TYPES):
        return Asked()
    if named:
        # The metric written is the subject: words elsewhere in the question name its computation.
        reading = replace(reading, unmatched=())
    built = measure_built(
        reading,
        found.hits,
        metric_catalog=held,
        carrier=words.carrier,
        label_names=words.label_names,
        window_minutes=window_minutes,
        named=named,
    )
    if isinstance(built, MeasureGap):
        return Asked(unnamed=built.why, computes=reading.computes)
    if built is None or not words.queried:
        return Asked()
    return Asked(quantity=built, computes=reading.computes, increase=built.computation == "increase")


def _held_name(held: MetricCatalog, written: str) -> str:
    """The catalog's metric a written name is: itself, else the one family whose name ends with it
    (`max_connections` of `pg_settings_max_connections`, a setting written as the server names it)."""
    if held.entry(written):
        return written
    ending = [entry.name for entry in held.metrics if entry.name.endswith(f"_{written}")]
    return ending[0] if len(ending) == 1 else ""


# --- Said in the conclusion ----------------------------------------------------------------------


def measure_lines(
    measure: Measure,
    found: Sequence[Found[SeriesRecord]],
    *,
    limit: int,
    besides: Sequence[tuple[Measure, Sequence[Found[SeriesRecord]]]] = (),
) -> list[str]:
    """One line per series: its subject's plain name (the asked values, then the labels that tell the
    series apart), what it is and the number with its unit, then the numbers asked with it (`besides`:
    each measure with its series) of the same series; the highest first."""
    records = [f.record for f in found]
    apart = _labels_apart(records, measure)
    ordered = sorted(found, key=lambda f: -(_latest(f.record) or Decimal("-Infinity")))
    lines = []
    for f in ordered[:limit]:
        name = _plain_name(f.record, measure, apart)
        said = [f"{measure.label}：{measure.said(_latest_raw(f.record))}"]
        for beside, series in besides:
            same = same_series(f.record, [s.record for s in series])
            if same is not None:
                said.append(f"{beside.label}：{beside.said(_latest_raw(same))}")
        lines.append(f"{name} 的 {'，'.join(said)}")
    return lines


def same_series(record: SeriesRecord, others: Sequence[SeriesRecord]) -> SeriesRecord | None:
    """Of another query's series, the one on the same subject: the only one, else the one whose
    labels agree with the record's on every label both carry."""
    if len(others) == 1:
        return others[0]
    own = {label: value for label, value in record.metric.items() if label != "__name__"}
    agreeing = [
        other
        for other in others
        if all(own[label] == value for label, value in other.metric.items() if label in own)
    ]
    return agreeing[0] if len(agreeing) == 1 else None


def measure_window(measure: Measure, record: SeriesRecord) -> str:
    """The range and sample time a value was computed over: `（最近 5 分钟速率，采样时间 12:00:00）`."""
    parts = []
    if measure.range_minutes:
        parts.append(f"按最近 {measure.range_minutes} 分钟计算")
    at, _ = record.sample()
    if at:
        parts.append(f"采样时间 {datetime.fromtimestamp(float(at)):%H:%M:%S}")
    return f"（{'，'.join(parts)}）" if parts else ""


def measure_name(measure: Measure, record: SeriesRecord, records: Sequence[SeriesRecord]) -> str:
    """A series' subject plainly: the asked values, then the labels that tell it from the others."""
    return _plain_name(record, measure, _labels_apart(records, measure))


def _labels_apart(records: Sequence[SeriesRecord], measure: Measure) -> list[str]:
    """The labels whose values differ between the series (grouped ones first): what tells them apart."""
    if len(records) < 2:
        return list(measure.grouped)
    labels = sorted({label for r in records for label in r.metric if label != "__name__"})
    differing = [label for label in labels if len({r.metric.get(label) for r in records}) > 1]
    first = [*measure.grouped, *PLAIN_NAME_LABELS]
    return sorted(differing, key=lambda label: (first.index(label) if label in first else len(first), label))


def _plain_name(record: SeriesRecord, measure: Measure, apart: list[str]) -> str:
    """The asked values, else the series' plain name (its `job`, else its target's address), else the
    metric; then the values of the labels that tell it from the other series."""
    values = [record.metric[label] for label in apart if record.metric.get(label)]
    target = [record.metric[label] for label in PLAIN_NAME_LABELS if record.metric.get(label)]
    asked = measure.about() or next((value for value in target if value not in values), "") or measure.metric
    return f"{asked}（{'，'.join(values)}）" if values else asked


def _latest_raw(record: SeriesRecord) -> object:
    if record.instant:
        return record.sample()[1]
    pairs = record.values or []
    return pairs[-1][1] if pairs else None


def _latest(record: SeriesRecord) -> Decimal | None:
    return decimal_of(_latest_raw(record))
