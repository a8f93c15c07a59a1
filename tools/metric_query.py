"""Queries by type (§22): the PromQL a question's words ask of the catalog's metrics, built by code.

A counter is answered as a per-second rate, or an increase over the asked window, never its raw
total; a histogram as `histogram_quantile(q, sum by (le) (rate(x_bucket[w])))`, a summary by its
`quantile` label; a ratio as the ratio of sibling counters' rates (hits / (hits + misses), rollbacks
/ (commits + rollbacks), 5xx / all) or of a gauge to its sibling limit (`…_max_…`, `…_size_…`; a free
gauge as 1 − free / limit); CPU time by mode as the share of time (1 − idle, or the mode named). A
ratio is computed × 100 by Prometheus itself, so the number the answer says is the number it returned.

Which metric: the first of the retrieval's hits (`tools.metric_search`) whose series carry every
subject the question names and that the computation fits; a subject that is also an operations word
(`iowait`, a `mode`) narrows where a series carries it and is no subject elsewhere. Every query is
read back by the PromQL parser before it is used. Django-free: the pipeline builds its queries here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tools.metric_catalog import MetricCatalog, MetricEntry
from tools.metric_search import MetricHit, MetricTerms, Reading, metric_terms, name_stems, part_is, segments
from tools.numbers import finite_number, number_text, places_text
from tools.promql import Carrier, LabelNames, quoted, syntax_error
from tools.terms import term_pattern

# The range a rate is taken over when the question names none.
RATE_WINDOW_MINUTES = 5
# The range of each rate of a trend: short, so the range shows how the rate moved (four scrapes at the
# usual 15 s interval).
TREND_RATE_MINUTES = 1
# How many hits past the first that fits are tried for one carrying more of the question's subjects.
LOOKAHEAD = 5
# The labels a host's share of CPU time is averaged by (Prometheus's own target labels: its job names
# the host plainly, its instance tells hosts of one job apart).
HOST_LABELS = ("job", "instance")
# Labels a series is named by in a conclusion before its others: its job (a plain name) before its
# target's address.
PLAIN_NAME_LABELS = ("job", "instance")

Computation = Literal["sample", "rate", "increase", "quantile", "ratio", "usage", "busy", "down"]
# The concept of a gauge that is 1 while a thing is up (`up`, `probe_success`): asked with its words
# ("哪个拨测挂了", "which probe is failing") it is read as which series are 0, and since when.
UP_CONCEPT = "up"
# A rate's unit by what its counter counts (a count, seconds of time, bytes).
RATE_UNITS = {"": "次/秒", "seconds": "秒/秒", "bytes": "字节/秒"}


class Measure(BaseModel):
    """A query built for an ask: what it computes, of which metric, on which subjects, in what unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    metric: str
    computation: Computation
    # What it is, as the conclusion names it: `每秒请求`, `p99 延迟`, `回滚 占比`.
    label: str
    # `percent`, the metric's unit (`seconds`, `bytes`, "" for a count) or `<unit>/s`.
    unit: str = ""
    # The label values it is on: (label, value).
    subjects: tuple[tuple[str, str], ...] = ()
    # The labels it is grouped by (one number per value).
    grouped: tuple[str, ...] = ()
    # The range a rate or increase is taken over, in minutes (0 for a sample).
    range_minutes: int = 0
    # Numbers asked with it, said on its line: what is used and the limit of a usage, the mode named
    # beside a CPU usage ("CPU 使用率和 iowait").
    beside: tuple[Measure, ...] = ()

    def said(self, raw: object) -> str:
        """A number it returned, with its unit as an engineer reads it: `12.5%`, `0.245 秒（245.00 毫秒）`,
        `1073741824 字节（1.00 GiB）`, `3.2 次/秒`; the number itself as Prometheus returned it."""
        number = finite_number(raw)
        text = number_text(str(raw))
        if number is None:
            return text
        base, per, _ = self.unit.partition("/")
        if per:
            return f"{text} {RATE_UNITS.get(base, f'{base}/秒')}"
        return f"{text}{_unit_word(base, number)}"

    def about(self) -> str:
        """Its subjects' values, plainly (`shop`, `nginx、/api/v1/query`), but for one its label says
        (the `iowait` of `iowait 占比`)."""
        return "、".join(value for _, value in self.subjects if value not in self.label)


@dataclass(frozen=True)
class MeasureGap:
    """Why no query answers the words: they name nothing, or nothing carries the subject."""

    why: str


def measure_built(
    reading: Reading,
    hits: Sequence[MetricHit],
    *,
    metric_catalog: MetricCatalog,
    carrier: Carrier | None,
    label_names: LabelNames | None,
    window_minutes: int = 0,
    named: str = "",
    terms: MetricTerms | None = None,
) -> Measure | MeasureGap | None:
    """The query the reading asks of the hits (or of the metric the question `named`); a gap when
    its words name nothing in the catalog or no metric carries its subjects; None when the catalog
    has nothing to say (empty, or no hit of a question that computes nothing)."""
    terms = terms or metric_terms()
    if metric_catalog.empty:
        return None
    if reading.unmatched:
        return MeasureGap(f"指标目录中没有与「{'、'.join(reading.unmatched)}」对应的指标")
    entry = metric_catalog.entry(named) if named else None
    candidates = [entry] if entry else [hit.entry for hit in hits]
    if not candidates:
        return None
    words = {word.lower() for concept in terms.concepts.values() for word in concept.words}
    hard = [(label, value) for label, value in reading.subjects if value.lower() not in words]
    soft = [(label, value) for label, value in reading.subjects if value.lower() in words]
    builder = _Builder(
        reading=reading,
        metric_catalog=metric_catalog,
        carrier=carrier,
        label_names=label_names,
        terms=terms,
        window_minutes=window_minutes,
    )
    # A limit the question names beside what it asks of ("用了 maxmemory 的多少") is the sibling the
    # usage divides by, not a word the used metric's name must have.
    name_words = [
        word
        for word in reading.name_words
        if not (reading.against or reading.ratio)
        or not any(_limit_part(word.lower(), limit) for limit in terms.limit_parts)
    ]
    fitting: list[tuple[int, int, Measure]] = []
    carried_any = False
    for rank, candidate in enumerate(candidates):
        # Each candidate costs the source a few label reads: past the first that fits, a few more are
        # tried for one that carries more of the narrowing subjects, then no more.
        if fitting and (rank - fitting[0][1] > LOOKAHEAD or -fitting[0][0] == len(soft)):
            break
        placed = builder.placed(candidate, hard)
        if placed is None or not _names_words(candidate, placed, name_words):
            continue
        carried_any = True
        narrowed = builder.placed(candidate, soft, every=False) or {}
        measure = builder.built(candidate, {**placed, **narrowed})
        if measure is not None:
            fitting.append((-len(narrowed), rank, measure))
            fitting.sort(key=lambda item: item[:2])
    if fitting:
        return min(fitting, key=lambda item: item[:2])[2]
    asked = "、".join(word for _, word in reading.concepts) or (named or "所问的指标")
    if (hard or name_words) and not carried_any:
        subjects = "、".join([*(value for _, value in hard), *name_words])
        return MeasureGap(f"指标目录中没有在 {subjects} 上的「{asked}」指标")
    if entry is None and not reading.computes:
        return None
    return MeasureGap(f"指标目录中没有能按所问计算的「{asked}」指标")


@dataclass(frozen=True)
class _Builder:
    reading: Reading
    metric_catalog: MetricCatalog
    carrier: Carrier | None
    label_names: LabelNames | None
    terms: MetricTerms
    window_minutes: int

    # --- Which series, on which labels ---

    def placed(
        self, entry: MetricEntry, subjects: Sequence[tuple[str, str]], *, every: bool = True
    ) -> dict[str, str] | None:
        """label → value of each subject on the label that carries it in the entry's series; None
        when one is carried by none of them (`every`), else those that are."""
        placed: dict[str, str] = {}
        for _, value in subjects:
            label = self._carrier_of(entry, value)
            if label is not None:
                placed.setdefault(label, value)
            elif every and value.lower() not in entry.parts():
                # A value its name says (the `database` of pg_stat_database_…) needs no matcher.
                return None
        return placed

    def _carrier_of(self, entry: MetricEntry, value: str) -> str | None:
        if entry.values:
            return next((label for label, values in entry.values.items() if value in values), None)
        if self.carrier is None:
            return None
        series = entry.series[0] if entry.series else entry.name
        # A value no label of its series holds anywhere is on none of them: no read of its values.
        held = self.metric_catalog.labels_with(value)
        if held and self.label_names is not None and not set(held) & self._labels(entry):
            return None
        return self.carrier(series, value)

    def _labels(self, entry: MetricEntry) -> frozenset[str]:
        if entry.labels:
            return frozenset(entry.labels)
        if self.label_names is None:
            return frozenset()
        return self.label_names(entry.series[0] if entry.series else entry.name)

    # --- By type ---

    def built(self, entry: MetricEntry, placed: dict[str, str]) -> Measure | None:
        reading = self.reading
        quantile = reading.quantile
        latency = "latency" in reading.concept_names
        if entry.type in ("histogram", "summary") and (quantile is not None or latency):
            return self._quantile(entry, placed, quantile or self.terms.default_quantile)
        if quantile is not None:
            return None
        if reading.against and not reading.ratio and entry.type in ("gauge", "unknown"):
            # Against a limit only where the gauge has one; else its value as asked.
            usage = self._usage(entry, placed)
            if usage is not None:
                return usage
        if self._idle_label(entry) and (reading.ratio or self._mode_named(entry, placed)):
            return self._busy(entry, placed)
        if reading.ratio and entry.type in ("gauge", "unknown") and entry.measured() in ("percent", "ratio"):
            # Already a share: its samples are the ratio asked.
            return self._sample(entry, placed)
        if reading.ratio:
            # A ratio its concepts have a rule for (hits, rollbacks, errors) is one of counters only.
            if entry.type == "counter" or self._ruled():
                return self._counter_ratio(entry, placed) if entry.type == "counter" else None
            return self._usage(entry, placed)
        if entry.type == "counter":
            return self._counted(entry, placed)
        up = UP_CONCEPT in reading.concept_names and self._named_of(entry, UP_CONCEPT)
        if up and entry.type in ("gauge", "unknown"):
            return self._sample(entry, placed).model_copy(update={"computation": "down"})
        if entry.type in ("histogram", "summary"):
            count = entry.series_ending("_count")
            return self._counted(entry, placed, series=count) if count else None
        return self._sample(entry, placed)

    def _quantile(self, entry: MetricEntry, placed: dict[str, str], quantile: float) -> Measure | None:
        word = self.reading.quantile_word or f"p{_percentile(quantile)}"
        label = f"{word} {self._word('latency')}"
        if entry.type == "histogram":
            bucket = entry.series_ending("_bucket")
            if bucket is None:
                return None
            by = ", ".join(("le", *self._grouped(entry)))
            query = f"histogram_quantile({quantile:g}, sum by ({by}) (rate({_selector(bucket, placed)}[{self._range()}])))"
            return self._measure(
                entry, query, "quantile", label, entry.measured(), placed, range_minutes=True
            )
        level = f"{quantile:g}"
        quantile_label = self._carrier_of(entry, level)
        if quantile_label is None or entry.name not in entry.series:
            return None
        query = _selector(entry.name, {**placed, quantile_label: level})
        return self._measure(entry, query, "quantile", label, entry.measured(), placed)

    def _counted(self, entry: MetricEntry, placed: dict[str, str], *, series: str | None = None) -> Measure:
        series = series or entry.sampled()
        grouped = self._grouped(entry)
        by = f" by ({', '.join(grouped)})" if grouped else ""
        word = self._word(next(iter(self.reading.concept_names), ""), fallback=entry.name)
        if self.reading.increase and not self.reading.rate:
            window = self.window_minutes or RATE_WINDOW_MINUTES
            query = f"sum{by} (increase({_selector(series, placed)}[{window}m]))"
            return self._measure(
                entry,
                query,
                "increase",
                _said_with(word, f"{window} 分钟内增量"),
                entry.measured(),
                placed,
                grouped,
                window,
            )
        query = f"sum{by} (rate({_selector(series, placed)}[{self._range()}]))"
        unit = f"{entry.measured()}/s"
        return self._measure(
            entry, query, "rate", _said_with(word, "每秒速率"), unit, placed, grouped, range_minutes=True
        )

    def _sample(self, entry: MetricEntry, placed: dict[str, str]) -> Measure:
        word = self._word(next(iter(self.reading.concept_names), ""), fallback=entry.name)
        # A word that is also the subject ("blackbox" the job) says nothing of what is read: its name.
        if word.lower() in {value.lower() for value in placed.values()}:
            word = entry.name
        return self._measure(
            entry, _selector(entry.sampled(), placed), "sample", word, entry.measured(), placed
        )

    def _busy(self, entry: MetricEntry, placed: dict[str, str]) -> Measure | None:
        """A seconds counter split by a mode label with an idle value (CPU time): the share of time in
        the mode named, else 1 − the idle share, averaged per host."""
        mode_label = self._idle_label(entry)
        if mode_label is None:
            return None
        host = [label for label in HOST_LABELS if label in self._labels(entry)]
        by = f" by ({', '.join(host)})" if host else ""
        series = entry.sampled()
        mode = placed.get(mode_label)
        moded = None
        if mode is not None:
            share = f"avg{by} (rate({_selector(series, placed)}[{self._range()}]))"
            moded = self._measure(
                entry,
                f"100 * {share}",
                "busy",
                _said_with(mode, "占比"),
                "percent",
                placed,
                range_minutes=True,
            )
            # The mode alone, unless the question also asks the usage ("CPU 使用率和 iowait"): a word
            # of the concept other than the mode's.
            if moded is None or not (self.reading.ratio and self._usage_asked_beside(mode)):
                return moded
        unmoded = {label: value for label, value in placed.items() if label != mode_label}
        idle = next(v for v in self.terms.idle_values if self._carrier_of(entry, v) == mode_label)
        share = f"avg{by} (rate({_selector(series, {**unmoded, mode_label: idle})}[{self._range()}]))"
        concept = next((c for c in self.reading.concept_names if self._own_part(entry, c)), "cpu")
        label = _said_with(self._word(concept), "使用率")
        usage = self._measure(
            entry, f"100 * (1 - {share})", "busy", label, "percent", unmoded, range_minutes=True
        )
        if usage is not None and moded is not None:
            return usage.model_copy(update={"beside": (moded,)})
        return usage

    def _usage_asked_beside(self, mode: str) -> bool:
        """Whether a concept word other than the mode named asks the busy share too."""
        return any(word.lower() != mode.lower() for _, word in self.reading.concepts)

    def _counter_ratio(self, entry: MetricEntry, placed: dict[str, str]) -> Measure | None:
        """part / (part + rest) of sibling counters (the sibling named like it with the other concept's
        part in place of its own), or part / whole: a sibling of the whole, or of a counter of the
        whole its status label's error values (5xx of a request counter)."""
        series = entry.sampled()
        part = self._rate_sum(series, entry, placed)
        for rule in self.terms.ratios:
            if rule.part not in self.reading.concept_names:
                continue
            label = _said_with(self._word(rule.part), "占比")
            own = self._own_part(entry, rule.part)
            if own and rule.rest:
                siblings = [self._sibling(entry, own, rest) for rest in rule.rest]
                if all(siblings):
                    rest = " + ".join(self._rate_sum(s.sampled(), entry, placed) for s in siblings if s)
                    query = f"100 * {part} / ({part} + {rest})"
                    return self._measure(entry, query, "ratio", label, "percent", placed, range_minutes=True)
            elif own and rule.whole and (whole := self._sibling(entry, own, rule.whole)) is not None:
                query = f"100 * {part} / {self._rate_sum(whole.sampled(), entry, placed)}"
                return self._measure(entry, query, "ratio", label, "percent", placed, range_minutes=True)
            elif rule.whole and self._own_part(entry, rule.whole) and (status := self._status_label(entry)):
                errors = self._rate_sum(series, entry, placed, matches={status: self._error_values()})
                query = f"100 * {errors} / {part}"
                return self._measure(entry, query, "ratio", label, "percent", placed, range_minutes=True)
        return None

    def _own_part(self, entry: MetricEntry, concept: str) -> str:
        """The part of the entry's name that makes it a metric of the concept, "" when none does."""
        terms = self.terms.concepts[concept].parts
        return next((p for p in entry.parts() if any(part_is(p, term) for term in terms)), "")

    def _rate_sum(
        self,
        series: str,
        entry: MetricEntry,
        placed: dict[str, str],
        *,
        matches: dict[str, str] | None = None,
    ) -> str:
        return (
            f"sum{self._by_text(entry)} (rate({_selector(series, placed, matches=matches)}[{self._range()}]))"
        )

    def _usage(self, entry: MetricEntry, placed: dict[str, str]) -> Measure | None:
        """A gauge against its sibling limit (same exporter prefix, concept and unit): used / limit, or
        1 − free / limit for a gauge of what is left; asked of the limit itself, of its used sibling."""
        if entry.type not in ("gauge", "unknown") or (self._setting(entry) and not self._is_limit(entry)):
            return None
        concept = next(iter(self.reading.concept_names), "")
        if self._is_limit(entry):
            used = self._siblings(entry, concept, limit=False)
            if not used:
                return None
            entry = used[0]
        limits = self._siblings(entry, concept, limit=True)
        if not limits:
            return None
        limit = limits[0]
        free = any(p in self.terms.free_parts for p in entry.parts())
        same = self._labels(entry) and self._labels(entry) == self._labels(limit)
        if same:
            numerator, denominator = _selector(entry.sampled(), placed), _selector(limit.sampled(), placed)
        else:
            common = sorted((self._labels(entry) & self._labels(limit)) - {"__name__"})
            by = f" by ({', '.join(common)})" if common else ""
            placed_limit = {label: value for label, value in placed.items() if label in self._labels(limit)}
            numerator = f"sum{by} ({_selector(entry.sampled(), placed)})"
            denominator = f"sum{by} ({_selector(limit.sampled(), placed_limit)})"
        share = f"{numerator} / ({denominator} > 0)"
        query = f"100 * (1 - {share})" if free else f"100 * {share}"
        word = self._word(concept, fallback=entry.name)
        usage = self._measure(entry, query, "usage", _said_with(word, "使用率"), "percent", placed)
        if usage is None:
            return None
        # What is used and the limit, said beside the share (asked together: "用了多少，上限是多少").
        kept = "剩余" if free else "已用"
        beside = (
            self._measure(entry, numerator, "sample", _said_with(word, kept), entry.measured(), placed),
            self._measure(limit, denominator, "sample", _said_with(word, "上限"), limit.measured(), placed),
        )
        return usage.model_copy(update={"beside": tuple(b for b in beside if b is not None)})

    # --- Siblings and labels ---

    def _sibling(self, entry: MetricEntry, own: str, concept: str) -> MetricEntry | None:
        """The family named like the entry with another concept's part in place of `own`."""
        if not concept:
            return None
        names = entry.name.split("_")
        for term in self.terms.concepts[concept].parts:
            for spelled in (term, term.capitalize()):
                candidate = "_".join(
                    part.lower().replace(own, spelled) if own in part.lower() else part for part in names
                )
                found = self.metric_catalog.entry(candidate)
                if found is not None and found.name != entry.name and found.type == entry.type:
                    return found
        return None

    def _siblings(self, entry: MetricEntry, concept: str, *, limit: bool) -> list[MetricEntry]:
        """Gauges of the entry's exporter (its name's first part) and concept, in its unit: the limits,
        or what is used (neither a limit nor the entry)."""
        prefix = entry.name.split("_")[0]
        found = []
        for other in self.metric_catalog.metrics:
            if (
                other.name == entry.name
                or other.name.split("_")[0] != prefix
                or other.type not in ("gauge", "unknown")
            ):
                continue
            if other.measured() != entry.measured() or self._is_limit(other) != limit:
                continue
            # A setting is a limit or a knob, never what is used (`pg_settings_superuser_reserved_…`).
            if not limit and self._setting(other):
                continue
            # What is used may say its concept in its HELP only; a limit says it in its name.
            of_concept = self._named_of if limit else self._of_concept
            if concept and not of_concept(other, concept):
                continue
            found.append(other)
        # One whose name says the concept before one whose HELP does; then the one sharing most of the
        # entry's name: redis_memory_used_bytes → redis_memory_max_bytes.
        return sorted(
            found,
            key=lambda other: (
                not (concept and self._named_of(other, concept)),
                -len(set(other.parts()) & set(entry.parts())),
                other.name,
            ),
        )

    def _setting(self, entry: MetricEntry) -> bool:
        return any(p in self.terms.setting_parts for p in entry.parts())

    def _named_of(self, entry: MetricEntry, concept: str) -> bool:
        return any(concept in self.terms.concept_of_part(p) for p in entry.parts())

    def _of_concept(self, entry: MetricEntry, concept: str) -> bool:
        """Of the concept by a part of its name or a word of its HELP ("number of connections in this
        state" of `pg_stat_activity_count`), as the search reads it."""
        if self._named_of(entry, concept):
            return True
        help_text = entry.help.lower()
        words = self.terms.concepts[concept].words if concept in self.terms.concepts else []
        return any(term_pattern(word).search(help_text) for word in words if word.isascii())

    def _ruled(self) -> bool:
        return any(rule.part in self.reading.concept_names for rule in self.terms.ratios)

    def _is_limit(self, entry: MetricEntry) -> bool:
        """A gauge named as a limit (`max`, `size`, `MemTotal`); a trailing `_total` is a counter's
        suffix, not a limit."""
        parts = entry.parts()
        if entry.name.endswith("_total"):
            parts = parts[: len(parts) - 1 - parts[::-1].index("total")] if "total" in parts else parts
        return any(_limit_part(part, limit) for part in parts for limit in self.terms.limit_parts)

    def _idle_label(self, entry: MetricEntry) -> str | None:
        """The label an idle value is carried on, for a counter of seconds (time split by mode)."""
        if entry.type != "counter" or entry.measured() != "seconds":
            return None
        return next((label for v in self.terms.idle_values if (label := self._carrier_of(entry, v))), None)

    def _mode_named(self, entry: MetricEntry, placed: dict[str, str]) -> bool:
        return self._idle_label(entry) in placed

    def _status_label(self, entry: MetricEntry) -> str | None:
        """The label of the entry holding HTTP status codes (every value three digits)."""
        for label in sorted(self._labels(entry)):
            values = self.metric_catalog.values.get(label, ())
            if values and all(len(v) == 3 and v.isdigit() for v in values):
                return label
        return None

    def _error_values(self) -> str:
        return "|".join(self.terms.error_values)

    def _grouped(self, entry: MetricEntry) -> tuple[str, ...]:
        labels = self._labels(entry)
        return tuple(label for label in self.reading.grouped if label in labels)

    def _by_text(self, entry: MetricEntry) -> str:
        grouped = self._grouped(entry)
        return f" by ({', '.join(grouped)})" if grouped else ""

    def _range(self) -> str:
        return f"{self.window_minutes or RATE_WINDOW_MINUTES}m"

    def _word(self, concept: str, *, fallback: str = "") -> str:
        if concept and concept in self.reading.concept_names:
            return self.reading.word_of(concept)
        return fallback or concept

    def _measure(
        self,
        entry: MetricEntry,
        query: str,
        computation: Computation,
        label: str,
        unit: str,
        placed: dict[str, str],
        grouped: tuple[str, ...] | None = None,
        range_minutes: int | bool = 0,
    ) -> Measure | None:
        # Code writes these queries; one the parser cannot read is a bug, never sent.
        if syntax_error(query) is not None:
            return None
        if range_minutes is True:
            range_minutes = self.window_minutes or RATE_WINDOW_MINUTES
        return Measure(
            query=query,
            metric=entry.name,
            computation=computation,
            label=label,
            unit=unit,
            subjects=tuple(placed.items()),
            grouped=self._grouped(entry) if grouped is None else grouped,
            range_minutes=int(range_minutes),
        )


def _names_words(entry: MetricEntry, placed: dict[str, str], words: Sequence[str]) -> bool:
    """Whether each word is a part of the entry's name or a word of a value it is queried on."""
    stems = name_stems([*entry.parts(), *(word for value in placed.values() for word in segments(value))])
    return all(name_stems([word]) <= stems for word in words)


def _selector(series: str, placed: dict[str, str], *, matches: dict[str, str] | None = None) -> str:
    matchers = [f'{label}="{quoted(value)}"' for label, value in placed.items()]
    matchers += [f'{label}=~"{quoted(pattern)}"' for label, pattern in (matches or {}).items()]
    return f"{series}{{{','.join(matchers)}}}" if matchers else series


def _limit_part(part: str, term: str) -> bool:
    """A name part of a limit: the word (`max`, `size`) or one it begins (`maxmemory`)."""
    return part == term or (len(term) >= 3 and part.startswith(term))


def _said_with(word: str, what: str) -> str:
    """A word and what is computed of it, as Chinese writes them: `回滚占比`, `requests 每秒速率`."""
    return f"{word} {what}" if word[-1:].isascii() or what[:1].isascii() else f"{word}{what}"


def _percentile(quantile: float) -> str:
    return f"{quantile * 100:g}"


def _unit_word(unit: str, number: Decimal) -> str:
    """The unit after a number: seconds with milliseconds beside a value under one, bytes with MiB or
    GiB beside a large one."""
    if unit == "seconds":
        if abs(number) < 1:
            return f" 秒（{places_text(number * 1000, places=2)} 毫秒）"
        return " 秒"
    if unit == "milliseconds":
        return " 毫秒"
    if unit == "bytes":
        if abs(number) >= 1024**3:
            return f" 字节（{places_text(number / 1024**3, places=2)} GiB）"
        if abs(number) >= 1024**2:
            return f" 字节（{places_text(number / 1024**2, places=2)} MiB）"
        return " 字节"
    if unit == "ratio":
        return f"（{places_text(number * 100, places=2)}%）"
    if unit == "percent":
        return "%"
    return f" {unit}" if unit else ""


Measure.model_rebuild()
