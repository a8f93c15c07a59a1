"""A starter vocabulary from what a Prometheus server says about its metrics
(`manage.py vocabulary --from-prometheus`): each metric's topics from its TYPE and the words of its
name and HELP text, read against a language table (`data/topic_words.json`: requests ↔ 请求量,
evictions ↔ 驱逐 …); a PromQL template per metric and topic, written by its TYPE (a counter's rate, a
histogram's or summary's quantile, a counter against its sibling, a gauge against its sibling limit)
on the label that names its subjects; each alerting rule's topic from the metric its `expr` reads.
The starter `extends` the shipped vocabulary: its topics add to the shipped words, never replace them.
Django-free: it reads the server's answers, not the server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property, lru_cache, partial
from pathlib import Path

import promql_parser
from pydantic import BaseModel, ConfigDict

from tools.metric_catalog import MetricEntry, catalog_from_metadata
from tools.promql import METRIC_NAME, SUBJECT_PLACEHOLDER, LabelNames, syntax_error
from tools.series import SUBJECT_LABELS
from tools.terms import name_parts
from tools.vocabulary import Vocabulary

TOPIC_WORDS_FILE = Path(__file__).parent / "data" / "topic_words.json"
# Templates per topic, the best of each exporter (a name's first part) first: a topic question on a
# subject queries the first two whose series carry it, so every exporter needs its place.
TEMPLATES_PER_TOPIC = 8
RATE_WINDOW = "5m"
# The subject's label when the source cannot tell a metric's labels: a placeholder that
# `tools.promql.subject_query` moves onto the label that carries the subject.
PLACEHOLDER_LABEL = "service"
# An alerting rule's name kept in the starter: one word of letters, digits, `_ . : -` (`KubePodCrashLooping`,
# `内存告警`). Prometheus takes any text as a name; a starter is read and merged by people, and a
# name with spaces, quotes or line breaks (`kubectl delete ns prod`) is no alert name to suggest.
ALERT_NAME = re.compile(r"[^\W\d][\w.:-]*")
# The values of a summary's `quantile` label: what a source says a summary's series carry.
QuantileValues = Callable[[str], Sequence[str]]


class RatioWords(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    part: tuple[str, ...]
    rest: tuple[str, ...]


class TopicWords(BaseModel):
    """One topic of `data/topic_words.json` (its `_comment` says what each field means)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    types: tuple[str, ...]
    words: tuple[str, ...]
    # The words that mark it in HELP text, where they differ (`load` is also a verb there).
    help: tuple[str, ...] | None = None
    none: tuple[str, ...] = ()
    terms: tuple[str, ...]
    label: str
    first: tuple[str, ...] = ()
    units: tuple[str, ...] = ()
    quantile: bool = False
    ratio: RatioWords | None = None
    usage: bool = False


class TopicTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    quantile: float
    settings: tuple[str, ...]
    limits: tuple[str, ...]
    free: tuple[str, ...]
    no_capacity: tuple[str, ...]
    topics: dict[str, TopicWords]


@lru_cache(maxsize=1)
def topic_table() -> TopicTable:
    raw = json.loads(TOPIC_WORDS_FILE.read_text(encoding="utf-8"))
    return TopicTable.model_validate({k: v for k, v in raw.items() if k != "_comment"})


def words_of(text: str) -> list[str]:
    """`node_memory_MemAvailable_bytes` → node memory mem available bytes; HELP text word by word."""
    return [
        word.lower()
        for chunk in re.split(r"[^A-Za-z0-9]+", text)
        for word in [chunk, *name_parts(chunk)]
        if word
    ]


class _Family:
    """A metric family as the starter reads it: its TYPE (a `_total` name without metadata is a
    counter), its name and HELP words, and the label naming its subjects."""

    def __init__(self, entry: MetricEntry, subject_label: Callable[[MetricEntry], str]) -> None:
        self.entry = entry
        self.name = entry.name
        self.type = "counter" if entry.type == "unknown" and entry.name.endswith("_total") else entry.type
        self.name_words = set(words_of(entry.name))
        self.help_words = set(words_of(entry.help))
        self._subject_label = subject_label

    @cached_property
    def subject(self) -> str:
        # Asked of the source only for the metrics a template is written for.
        return self._subject_label(self.entry)

    def selector(self, series: str, *, extra: str = "") -> str:
        return f'{series}{{{self.subject}="{SUBJECT_PLACEHOLDER}"{extra}}}'

    def rate(self, series: str) -> str:
        return f"sum by ({self.subject}) (rate({self.selector(series)}[{RATE_WINDOW}]))"


class _Starter:
    def __init__(
        self,
        *,
        metadata: Mapping[str, list[dict]],
        metric_names: Iterable[str],
        label_names: LabelNames | None,
        quantile_values: QuantileValues | None,
        service_labels: Sequence[str],
    ) -> None:
        self.table = topic_table()
        names = [name for name in dict.fromkeys(metric_names) if METRIC_NAME.fullmatch(name)]
        self.catalog = catalog_from_metadata(metadata=metadata, names=names, values={})
        self.label_names = label_names
        self.quantile_values = quantile_values
        self.subject_labels = tuple(dict.fromkeys([*service_labels, *SUBJECT_LABELS]))
        self.topic_words = frozenset(word for topic in self.table.topics.values() for word in topic.words)
        self.families = {
            entry.name: _Family(entry, self._subject_label)
            for entry in self.catalog.metrics
            if not entry.name.startswith("ALERTS")
        }

    def _subject_label(self, entry: MetricEntry) -> str:
        """The first service label its series carry, else the first label naming a target."""
        labels = self._series_labels(entry)
        return next((label for label in self.subject_labels if label in labels), PLACEHOLDER_LABEL)

    def _series_labels(self, entry: MetricEntry) -> frozenset[str]:
        """The label names of the family's series; none when the source cannot tell them."""
        if self.label_names is None:
            return frozenset()
        return frozenset(self.label_names(entry.series[0] if entry.series else entry.name))

    # --- Which metrics, which topic ---

    def is_setting(self, family: _Family) -> bool:
        return bool(family.name_words & set(self.table.settings))

    def is_limit(self, family: _Family) -> bool:
        """A gauge named as a limit (`max`, `size`, `MemTotal`, `maxmemory`); a counter's trailing
        `_total` is its suffix, not a limit."""
        if family.type not in ("gauge", "unknown"):
            return False
        words = set(_name_words(family.name.removesuffix("_total")))
        if words & set(self.table.no_capacity):
            return False
        return any(_limit_word(word, limit) for word in words for limit in self.table.limits)

    def of_topic(self, family: _Family, topic: TopicWords) -> bool:
        if family.type not in topic.types or self.is_setting(family):
            return False
        if topic.units and _read_unit(family, topic) not in topic.units:
            return False
        if (family.name_words | family.help_words) & set(topic.none):
            return False
        if topic.usage:
            return False
        help_words = topic.words if topic.help is None else topic.help
        return bool(family.name_words & set(topic.words) or family.help_words & set(help_words))

    def rank(self, family: _Family, topic: TopicWords) -> tuple:
        """What is used before its limits, the topic's first words ahead (in their order: `connected`
        and `clients` before `connected` alone), then by its preferred TYPEs, shorter names."""
        words = set(words_of(family.name))
        first = (*(i for i, word in enumerate(topic.first) if word in words), len(topic.first))
        return (self.is_limit(family), first, topic.types.index(family.type), len(family.name), family.name)

    # --- Templates by TYPE ---

    def template(self, family: _Family, topic: TopicWords) -> str | None:
        entry = family.entry
        if topic.ratio is not None:
            return self._ratio(family, topic.ratio)
        if family.type == "counter":
            return family.rate(entry.sampled())
        if family.type == "histogram" and topic.quantile:
            bucket = entry.series_ending("_bucket")
            if bucket is None:
                return None
            return (
                f"histogram_quantile({self.table.quantile:g}, sum by (le, {family.subject}) "
                f"(rate({family.selector(bucket)}[{RATE_WINDOW}])))"
            )
        if family.type == "summary" and topic.quantile:
            return self._summary(family)
        if family.type in ("histogram", "summary"):
            count = entry.series_ending("_count")
            return family.rate(count) if count else None
        return family.selector(entry.sampled())

    def _summary(self, family: _Family) -> str | None:
        """Its series at the level nearest the table's quantile (`quantile="0.99"`, or `"99"` where
        the levels are percents); a summary without levels as its mean, sum / count."""
        entry = family.entry
        levels = (
            list(self.quantile_values(entry.name)) if self.quantile_values else [f"{self.table.quantile:g}"]
        )
        level = _nearest_level(levels, self.table.quantile)
        if level is not None and entry.name in entry.series:
            return family.selector(entry.name, extra=f',quantile="{level}"')
        total, count = entry.series_ending("_sum"), entry.series_ending("_count")
        if total and count:
            return f"{family.rate(total)} / {family.rate(count)}"
        return None

    def _ratio(self, family: _Family, ratio: RatioWords) -> str | None:
        """part / (part + rest) of sibling counters: the name with its part word replaced by a rest word."""
        parts = family.name.split("_")
        own = [i for i, part in enumerate(parts) if part.lower() in ratio.part]
        for index in own:
            for rest in ratio.rest:
                sibling = self.families.get("_".join([*parts[:index], rest, *parts[index + 1 :]]))
                if sibling is not None and sibling.type == family.type:
                    part = family.rate(family.entry.sampled())
                    return f"{part} / ({part} + {family.rate(sibling.entry.sampled())})"
        return None

    def usages(self, topic: TopicWords) -> list[tuple[_Family, _Family]]:
        """Each limit with its used sibling (same exporter, every word of what it limits, same unit)."""
        return [
            (used, limit)
            for limit in self.families.values()
            if self.is_limit(limit) and (used := self._used_of(limit, topic)) is not None
        ]

    def usage_template(self, used: _Family, limit: _Family) -> str | None:
        """used / limit, or 1 − free / limit: series by series where both carry the same labels, else
        summed by the subject label."""
        if used.subject != limit.subject:
            return None
        labels = self._series_labels(used.entry)
        if labels and labels == self._series_labels(limit.entry):
            numerator, denominator = (
                used.selector(used.entry.sampled()),
                limit.selector(limit.entry.sampled()),
            )
        else:
            numerator = f"sum by ({used.subject}) ({used.selector(used.entry.sampled())})"
            denominator = f"sum by ({used.subject}) ({limit.selector(limit.entry.sampled())})"
        share = f"{numerator} / ({denominator} > 0)"
        return f"1 - {share}" if used.name_words & set(self.table.free) else share

    def _used_of(self, limit: _Family, topic: TopicWords) -> _Family | None:
        """The gauge of the limit's exporter, in its unit, that names everything it limits (in its name,
        or by a topic word in its HELP), one of the topic's first words (`connected`, `used`, `avail`)
        ahead."""
        prefix = limit.name.split("_")[0]
        limited = self._limited_words(limit)
        candidates = [
            other
            for other in self.families.values()
            if other.name != limit.name
            and other.name.split("_")[0] == prefix
            and other.type in ("gauge", "unknown")
            and not self.is_limit(other)
            and not self.is_setting(other)
            and other.entry.measured() == limit.entry.measured()
            and limited
            and limited <= set(_name_words(other.name)) | (other.help_words & self.topic_words)
        ]
        return min(candidates, key=lambda other: self.rank(other, topic), default=None)

    def _limited_words(self, limit: _Family) -> set[str]:
        """What a limit limits: its name words past its exporter's, without settings, limit and unit
        words; `maxclients` says clients."""
        words = set()
        for word in _name_words("_".join(limit.name.split("_")[1:])):
            prefix = next((p for p in self.table.limits if _limit_word(word, p) and word != p), "")
            words.add(word.removeprefix(prefix))
        unit = {limit.entry.measured(), "bytes", "seconds"}
        return words - set(self.table.settings) - set(self.table.limits) - unit - {""}


def vocabulary_from_source(
    *,
    metadata: Mapping[str, list[dict]],
    metric_names: Iterable[str],
    rules: Iterable[dict],
    label_names: LabelNames | None = None,
    quantile_values: QuantileValues | None = None,
    service_labels: Sequence[str] = ("service", "app", "job"),
) -> Vocabulary:
    """The starter vocabulary of one server: its metadata (`/api/v1/metadata`), the series names it
    holds (`__name__` values), its alerting rules (`/api/v1/rules`) and, where it can tell them, each
    series name's label names and each summary's `quantile` values. It extends the shipped vocabulary."""
    starter = _Starter(
        metadata=metadata,
        metric_names=metric_names,
        label_names=label_names,
        quantile_values=quantile_values,
        service_labels=service_labels,
    )
    table = starter.table
    promql_topics: dict[str, list[str]] = {}
    # An alert's topic: the first topic reading the series its expr reads (a histogram's buckets are
    # its latency, its `_count` its requests), a usage (what it is read against) last.
    topic_of_metric: dict[str, str] = {}
    usage_of_metric: dict[str, str] = {}
    for name, topic in table.topics.items():
        # (rank, the metric, how its template is written), each exporter's best first.
        candidates: list[tuple[tuple, _Family, Callable[[], str | None]]] = [
            (starter.rank(used, topic), used, partial(starter.usage_template, used, limit))
            for used, limit in (starter.usages(topic) if topic.usage else [])
        ]
        candidates += [
            (starter.rank(family, topic), family, partial(starter.template, family, topic))
            for family in starter.families.values()
            if starter.of_topic(family, topic)
        ]
        for _, family, _ in candidates:
            for series in _read_series(family, topic):
                (usage_of_metric if topic.usage else topic_of_metric).setdefault(series, name)
        templates: list[str] = []
        for written in _by_exporter(candidates):
            template = written()
            # Code writes these templates; one the parser cannot read is a bug, never written.
            if template and template not in templates and syntax_error(_on_a_subject(template)) is None:
                templates.append(template)
            if len(templates) == TEMPLATES_PER_TOPIC:
                break
        if templates:
            promql_topics[name] = templates
    alert_topics = {
        rule["name"]: topic
        for rule in rules
        if ALERT_NAME.fullmatch(str(rule.get("name") or ""))
        and (topic := _rule_topic(str(rule.get("query") or ""), usage_of_metric | topic_of_metric))
    }
    return Vocabulary(
        extends=True,
        groups={topic: list(table.topics[topic].terms) for topic in promql_topics},
        topic_labels={topic: table.topics[topic].label for topic in promql_topics},
        promql_topics=promql_topics,
        alert_topics=alert_topics,
    )


def _by_exporter(candidates: list[tuple[tuple, _Family, Callable]]) -> list[Callable[[], str | None]]:
    """The candidates best first, each exporter's (a name's first part) best before any exporter's
    second, and limits after them all."""
    seen: dict[str, int] = {}
    keyed = []
    for rank, family, written in sorted(candidates, key=lambda candidate: candidate[0]):
        prefix = family.name.split("_")[0]
        seen[prefix] = seen.get(prefix, 0) + 1
        keyed.append(((rank[0], seen[prefix], rank), written))
    return [written for _, written in sorted(keyed, key=lambda k: k[0])]


def _on_a_subject(template: str) -> str:
    return template.replace(SUBJECT_PLACEHOLDER, "subject")


def _rule_topic(expr: str, topic_of_series: dict[str, str]) -> str | None:
    return next((topic_of_series[m] for m in _metrics_of(expr) if m in topic_of_series), None)


def _read_series(family: _Family, topic: TopicWords) -> tuple[str, ...]:
    """The series of the family a topic reads: a histogram's or summary's `_count` where the topic
    counts, its other series where it takes a quantile."""
    series = family.entry.series or (family.name,)
    if family.type not in ("histogram", "summary"):
        return series
    counts = tuple(s for s in series if s.endswith("_count"))
    return tuple(s for s in series if s not in counts) if topic.quantile else counts


def _read_unit(family: _Family, topic: TopicWords) -> str:
    """The unit of what a topic reads of the metric: a histogram's or summary's `_count` counts."""
    if family.type in ("histogram", "summary") and not topic.quantile:
        return ""
    return family.entry.measured()


def _name_words(name: str) -> list[str]:
    """A name's words, lower case: its snake_case parts, a CamelCase part by its humps (`MemTotal`
    → mem, total)."""
    words = []
    for part in name.split("_"):
        humps = name_parts(part)
        words += [hump.lower() for hump in humps] if len(humps) > 1 else [part.lower()]
    return [word for word in words if word]


def _limit_word(word: str, limit: str) -> bool:
    """A word of a limit: the limit word, or one it begins (`maxmemory`, `maxclients`)."""
    return word == limit or (len(limit) >= 3 and word.startswith(limit) and limit != "total")


def _nearest_level(levels: Sequence[str], quantile: float) -> str | None:
    """The level nearest the quantile; levels above 1 are percents (`99.9`)."""
    numbers = []
    for level in levels:
        try:
            numbers.append((float(level), level))
        except ValueError:
            continue
    if not numbers:
        return None
    scale = 100.0 if any(number > 1 for number, _ in numbers) else 1.0
    return min(numbers, key=lambda pair: abs(pair[0] / scale - quantile))[1]


def _metrics_of(expr: str) -> list[str]:
    try:
        tree = promql_parser.parse(expr)
    except ValueError:
        return []
    names: list[str] = []
    promql_parser.walk(
        tree,
        lambda node: (
            names.append(node.name) if isinstance(node, promql_parser.VectorSelector) and node.name else None
        ),
    )
    return names
