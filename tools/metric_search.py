"""Words to series (§22): a question's words matched to the metrics of the catalog.

One retrieval: BM25 (`bm25s`, the tokens of `tools.tokens`) over each metric family's name parts
(split at `_` and CamelCase) and HELP text, both sides expanded with the bilingual operations terms
shipped as data (`data/metric_terms.json`: 请求数 ↔ requests, 死锁 ↔ deadlocks, 拨测 ↔ probe …, each
with the name parts that mark a metric of it) and the world vocabulary's own groups and ops terms, so
`驱逐` meets `redis_evicted_keys_total` and `数据库` meets a HELP that says "database". A metric that
shares none of the question's terms is no hit: a word that names nothing in the catalog is said to
name nothing (`Reading.unmatched`), never answered with another metric.

Subjects are any label value the catalog holds (a database's `datname`, a probe's `instance`, a
`handler`, a `job`), read as whole words; the words that ask for a rate, an increase, a quantile, a
ratio or a grouping are read here too (`words_read`), so `tools.metric_query` builds the query.

Django-free: the pipeline reads questions with it.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import bm25s
from pydantic import BaseModel, ConfigDict, Field

from tools.metric_catalog import MetricCatalog, MetricEntry
from tools.terms import query_terms, term_pattern
from tools.tokens import STEMMER, words
from tools.vocabulary import Vocabulary

TERMS_FILE = Path(__file__).parent / "data" / "metric_terms.json"
# A concept token or a vocabulary meaning carries more than one word: a query counts it this often.
MEANING_WEIGHT = 2
# How many hits a search keeps: enough for the first that fits a computation (a disk's size and
# what is free, beyond the metrics whose HELP only mentions a disk).
MAX_HITS = 25
# A label value shorter than this, or a number, is no subject ("0", "1", a cpu's index).
MIN_VALUE_CHARS = 2
# A subject or a word stands alone: not inside a longer name, path or address.
_ALONE_BEFORE = r"(?<![A-Za-z0-9_/.:-])"
_ALONE_AFTER = r"(?![A-Za-z0-9_/:-])(?!\.[A-Za-z0-9])"
# "query handler": a word, then a label's name: the one value of that label with the word as a segment.
LABEL_AFTER_WORD = re.compile(
    r"(?<![a-z0-9_/.:-])(?P<word>[a-z][a-z0-9_]*)\s+(?P<label>[a-z_][a-z0-9_]*)(?![a-z0-9_])"
)
# A metric a PromQL template selects: its name before its braces or range.
TEMPLATE_METRIC = re.compile(r"(?<![A-Za-z0-9_:])(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)\s*(?=\{|\[)")
# A path a question writes (`/api/v1/query_range`, `/data`): a label value, or a name of nothing.
PATH = re.compile(r"(?<![A-Za-z0-9_/.:-])/[A-Za-z0-9_./:{}-]+")
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN_WORD = re.compile(r"(?<![A-Za-z0-9_/.:-])[A-Za-z][A-Za-z0-9]*(?:[-'][A-Za-z0-9]+)*(?![A-Za-z0-9_/:-])")
# The concept a quantile word means when the question names no other: durations.
LATENCY = "latency"
# A word this short names nothing on its own ("db", "io"): never said to name nothing.
MIN_NAMING_CHARS = 3
logging.getLogger("bm25s").setLevel(logging.WARNING)


class Concept(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    words: list[str]
    # Parts of metric names that mark a metric of it (`evicted` in redis_evicted_keys_total).
    parts: list[str]
    # The unit its metrics are usually in (memory in bytes): of two metrics of it, the one in it first.
    unit: str = ""


class RatioRule(BaseModel):
    """How a ratio of one concept's counter is made: `part / (part + rest…)` (hits over hits and
    misses) or `part / whole` (errors over requests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    part: str
    rest: list[str] = []
    whole: str = ""


class MetricTerms(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    comment: str = Field(default="", alias="_comment")
    concepts: dict[str, Concept]
    quantiles: dict[str, float]
    default_quantile: float = Field(gt=0, lt=1)
    rate: list[str]
    increase: list[str]
    ratio: list[str]
    # Words that ask for a gauge against its sibling limit ("用了 maxmemory 的多少", "in use against").
    against: list[str]
    ratios: list[RatioRule]
    error_values: list[str]
    limit_parts: list[str]
    free_parts: list[str]
    # Name parts of a setting (`pg_settings_…`, `redis_config_…`): a limit or a knob, never what is used.
    setting_parts: list[str]
    idle_values: list[str]
    by: list[str]
    filler: list[str]
    # Words after which an English question names a subject ("lag of kafka").
    subject_after: list[str]

    def computing(self) -> list[str]:
        """The words that ask for a computation or a grouping, not for a metric."""
        return [*self.rate, *self.increase, *self.ratio, *self.against, *self.quantiles, *self.by]

    def concept_of_part(self, part: str) -> list[str]:
        return [
            name for name, concept in self.concepts.items() if any(part_is(part, p) for p in concept.parts)
        ]


@lru_cache(maxsize=1)
def metric_terms() -> MetricTerms:
    raw = TERMS_FILE.read_text(encoding="utf-8")
    return MetricTerms.model_validate_json(raw)


def part_is(name_part: str, term: str) -> bool:
    """A metric name part of a term: the term itself, or a longer part that begins or ends with it
    (`maxmemory` of memory, `numbackends` of backends)."""
    return name_part == term or (len(term) >= 4 and (name_part.startswith(term) or name_part.endswith(term)))


@dataclass(frozen=True)
class Reading:
    """What a question's words ask of the metrics."""

    # Concepts named, in the order written, each with the word that named it.
    concepts: tuple[tuple[str, str], ...] = ()
    quantile: float | None = None
    quantile_word: str = ""
    rate: bool = False
    increase: bool = False
    ratio: bool = False
    # It asks a gauge against its limit ("in use against max_connections").
    against: bool = False
    # Words after a grouping word (`by handler`, `按 handler`): label names the query groups by.
    grouped: tuple[str, ...] = ()
    # Label values of the catalog the question names: (label, value), the value as the catalog has it.
    subjects: tuple[tuple[str, str], ...] = ()
    # Words that ask about a metric but that nothing in the catalog has (`驱逐` where no metric evicts).
    unmatched: tuple[str, ...] = ()
    # Words that are parts of metric names (`nginx`, `go`, `gc`, `http`) besides the concepts' and
    # the subjects': the metric asked has each in its name, or on the subject it is queried on.
    name_words: tuple[str, ...] = ()

    @property
    def concept_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for name, _ in self.concepts))

    @property
    def computes(self) -> bool:
        """It asks for a computation over series: a quantile, a rate, an increase or a ratio."""
        return self.quantile is not None or self.rate or self.increase or self.ratio or self.against

    def word_of(self, concept: str) -> str:
        return next((word for name, word in self.concepts if name == concept), concept)


@dataclass(frozen=True)
class MetricHit:
    entry: MetricEntry
    score: float
    # The question's concepts this metric is of.
    concepts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Search:
    """What a question's words found in the catalog: how they read, and the metrics they are about."""

    reading: Reading
    hits: tuple[MetricHit, ...] = ()


def metrics_searched(
    text: str,
    *,
    metric_catalog: MetricCatalog,
    vocabulary: Vocabulary | None = None,
    known_names: frozenset[str] = frozenset(),
    terms: MetricTerms | None = None,
    limit: int = MAX_HITS,
) -> Search:
    """The question's concepts, computation words, grouping, subjects (catalog label values), the
    metrics they are about and the words that name nothing in the catalog. `known_names`: services
    and alerts the inventory knows (never a word that names nothing). A ratio of a part to a whole
    (errors to requests) is about the whole's metrics too: a 5xx share is read off a request counter."""
    terms = terms or metric_terms()
    reading = words_read(text, metric_catalog=metric_catalog, terms=terms)
    if metric_catalog.empty:
        return Search(reading=reading)
    wholes = tuple(
        rule.whole
        for rule in terms.ratios
        if reading.ratio and rule.whole and rule.part in reading.concept_names
    )
    hits = metrics_ranked(
        text, metric_catalog=metric_catalog, vocabulary=vocabulary, terms=terms, limit=limit, also=wholes
    )
    # Words of concepts no metric is of, when no metric is of any: one word that qualifies another
    # (缓存 of 缓存命中率) may have no metric of its own.
    unmatched = [word for _, word in reading.concepts] if not hits else []
    unmatched += _words_naming_nothing(
        text, metric_catalog=metric_catalog, vocabulary=vocabulary, terms=terms, known_names=known_names
    )
    return Search(reading=replace(reading, unmatched=tuple(dict.fromkeys(unmatched))), hits=tuple(hits))


def words_read(text: str, *, metric_catalog: MetricCatalog, terms: MetricTerms | None = None) -> Reading:
    """The question's concepts (a quantile word alone means durations), computation words, grouping
    and subjects."""
    terms = terms or metric_terms()
    lowered = PATH.sub(lambda match: " " * len(match.group(0)), text.lower())
    # Lower-casing keeps each character's place (ASCII and CJK): a span of `lowered` is one of `text`.
    concepts = [
        (name, text[start:end] if len(text) == len(lowered) else lowered[start:end])
        for name, (start, end) in _spans(lowered, {n: c.words for n, c in terms.concepts.items()})
    ]
    quantile_word = next(
        (
            word
            for word in sorted(terms.quantiles, key=len, reverse=True)
            if term_pattern(word).search(lowered)
        ),
        "",
    )
    if quantile_word and LATENCY in terms.concepts and LATENCY not in {name for name, _ in concepts}:
        concepts.append((LATENCY, terms.concepts[LATENCY].words[0]))
    subjects = subjects_named(text, metric_catalog=metric_catalog)
    return Reading(
        concepts=tuple(concepts),
        name_words=_name_words(lowered, metric_catalog, terms, subjects),
        quantile=terms.quantiles[quantile_word] if quantile_word else None,
        quantile_word=quantile_word,
        rate=_any_word(lowered, terms.rate),
        increase=_any_word(lowered, terms.increase),
        # The 率 of 速率 or 频率 is a rate's word, not a ratio's.
        ratio=_any_word(_without(lowered, terms.rate), terms.ratio),
        against=_any_word(lowered, terms.against),
        grouped=_grouped(lowered, terms.by),
        subjects=tuple(subjects),
    )


def subjects_named(text: str, *, metric_catalog: MetricCatalog) -> list[tuple[str, str]]:
    """(label, value) of each label value of the catalog the text names as a whole word, longer
    values first (`/api/v1/query` before `/api`), in the order written; a value several labels hold
    is named once, under its first label (the query places it on the label its series carry)."""
    lowered = text.lower()
    found: list[tuple[str, str, tuple[int, int]]] = []
    for value, label in sorted(_naming_values(metric_catalog).items(), key=lambda item: -len(item[0])):
        for match in _alone(value).finditer(lowered):
            if all(match.end() <= s or match.start() >= e for _, _, (s, e) in found):
                found.append((label, value, match.span()))
                break
    for match in LABEL_AFTER_WORD.finditer(lowered):
        word, label = match.group("word"), match.group("label")
        segment_of = [v for v in metric_catalog.values.get(label, ()) if word in segments(v)]
        if len(segment_of) == 1 and all(match.end() <= s or match.start() >= e for _, _, (s, e) in found):
            found.append((label, segment_of[0], match.span()))
    return [(label, value) for label, value, _ in sorted(found, key=lambda item: item[2][0])]


def _name_words(
    lowered: str, metric_catalog: MetricCatalog, terms: MetricTerms, subjects: list[tuple[str, str]]
) -> tuple[str, ...]:
    """The question's words that are parts of metric names (as stems: `key` of `keys`), other than
    concept, computation and filler words (phrases too: the `second` of "per second"), label names
    and the subjects' values."""
    asking = [word for concept in terms.concepts.values() for word in [*concept.words, *concept.parts]]
    asking += [*terms.computing(), *terms.filler]
    asking += [value for _, value in subjects] + list(metric_catalog.values)
    masked = PATH.sub(" ", lowered)
    for _, (start, end) in _spans(masked, {"": asking}):
        masked = masked[:start] + " " * (end - start) + masked[end:]
    stems = _name_stems(metric_catalog)
    found = [match.group(0) for match in LATIN_WORD.finditer(masked)]
    return tuple(dict.fromkeys(word for word in found if STEMMER.stemWord(word) in stems))


def name_stems(parts: list[str]) -> set[str]:
    return {STEMMER.stemWord(part) for part in parts}


def _name_stems(metric_catalog: MetricCatalog) -> frozenset[str]:
    key = (id(metric_catalog), 0, 0)
    cached = _PARTS.get(key)
    if cached is not None and cached[0] is metric_catalog:
        return cached[1]
    stems = frozenset(stem for entry in metric_catalog.metrics for stem in name_stems(entry.parts()))
    if len(_PARTS) >= MAX_INDEXES:
        _PARTS.pop(next(iter(_PARTS)))
    _PARTS[key] = (metric_catalog, stems)
    return stems


_PARTS: dict[tuple[int, int, int], tuple[MetricCatalog, frozenset[str]]] = {}


def segments(value: str) -> set[str]:
    """The words of a label value: `/api/v1/query` → api, v1, query."""
    return {part for part in re.split(r"[/._:\s-]+", value.lower()) if part}


def metrics_ranked(
    text: str,
    *,
    metric_catalog: MetricCatalog,
    vocabulary: Vocabulary | None = None,
    terms: MetricTerms | None = None,
    limit: int = MAX_HITS,
    also: tuple[str, ...] = (),
) -> list[MetricHit]:
    """The metrics the text's words are about (and the concepts `also` named), best first: those
    sharing the most of its concepts, then by BM25 over name parts and HELP. With concepts in the text
    a metric must be of one; without, it must share a word of its name or a vocabulary meaning."""
    terms = terms or metric_terms()
    if metric_catalog.empty:
        return []
    index = _index(metric_catalog, vocabulary, terms)
    wanted = list(dict.fromkeys([*_query_tokens(text, vocabulary, terms), *(f"c:{c}" for c in also)]))
    if not wanted:
        return []
    weighted = [t for token in wanted for t in [token] * _weight(token)]
    scores = index.retriever.get_scores(weighted)
    asked = {token for token in wanted if token.startswith("c:")}
    meanings = {token for token in wanted if token.startswith(("g:", "t:"))}
    templated = _templated(vocabulary, {token[2:] for token in meanings if token.startswith("g:")})
    ranked = []
    for entry, tokens, score in zip(metric_catalog.metrics, index.tokens, scores, strict=True):
        shared = set(wanted) & tokens
        concepts = tuple(sorted(token[2:] for token in shared & asked))
        if asked and not concepts:
            continue
        if not asked and not shared & (index.name_tokens[entry.name] | meanings):
            continue
        # How much of what the question means it covers: its concepts, in their usual unit, the
        # vocabulary's meanings (数据库 → a database's metrics before another exporter's connections)
        # and the metrics the vocabulary's own queries of its topics name; a concept its name says
        # (`node_filesystem_*` of the disk) before one only its HELP mentions.
        named = {token for token in shared if token.startswith("n:")}
        covered = len(concepts) + len(named) + len(shared & meanings) + (entry.name in templated)
        covered += sum(terms.concepts[c].unit == entry.measured() != "" for c in concepts)
        ranked.append((covered, MetricHit(entry=entry, score=float(score), concepts=concepts)))
    ranked.sort(key=lambda pair: (-pair[0], -pair[1].score, pair[1].entry.name))
    return [hit for _, hit in ranked[:limit]]


# --- The index ---------------------------------------------------------------------------------


@dataclass
class _Index:
    retriever: bm25s.BM25
    tokens: list[frozenset[str]]
    name_tokens: dict[str, frozenset[str]]


# Indexes by catalog; the catalog object is kept so its id is never reused while cached.
_INDEXES: dict[tuple[int, int, int], tuple[MetricCatalog, _Index]] = {}
MAX_INDEXES = 8


def _index(metric_catalog: MetricCatalog, vocabulary: Vocabulary | None, terms: MetricTerms) -> _Index:
    key = (id(metric_catalog), id(vocabulary), id(terms))
    cached = _INDEXES.get(key)
    if cached is not None and cached[0] is metric_catalog:
        return cached[1]
    corpus = [_entry_tokens(entry, vocabulary, terms) for entry in metric_catalog.metrics]
    retriever = bm25s.BM25()
    retriever.index([list(tokens) or ["\x00"] for tokens in corpus], show_progress=False)
    index = _Index(
        retriever=retriever,
        tokens=[frozenset(tokens) for tokens in corpus],
        name_tokens={entry.name: frozenset(words(_spaced(entry.name))) for entry in metric_catalog.metrics},
    )
    if len(_INDEXES) >= MAX_INDEXES:
        _INDEXES.pop(next(iter(_INDEXES)))
    _INDEXES[key] = (metric_catalog, index)
    return index


def _entry_tokens(entry: MetricEntry, vocabulary: Vocabulary | None, terms: MetricTerms) -> list[str]:
    """Its name's words and HELP's words, and a token per concept it is of (by a part of its name or a
    concept word in its HELP) and per vocabulary group or ops term its words use."""
    spaced = _spaced(entry.name)
    help_text = entry.help.lower()
    named = {name for part in entry.parts() for name in terms.concept_of_part(part)}
    # A concept its name says counts twice (`c:` and `n:`): `node_filesystem_*` is of the disk more
    # than a metric whose HELP mentions a disk.
    concepts = {f"c:{name}" for name in named} | {f"n:{name}" for name in named}
    concepts |= {
        f"c:{name}"
        for name, concept in terms.concepts.items()
        if any(term_pattern(word).search(help_text) for word in concept.words if word.isascii())
    }
    return [
        *words(f"{spaced} {entry.help}"),
        *sorted(concepts),
        *_meanings(f"{spaced} {entry.help}", vocabulary),
    ]


def _query_tokens(text: str, vocabulary: Vocabulary | None, terms: MetricTerms) -> list[str]:
    """Its words without the computation words and paths (a label value's words are no metric's), a
    token per concept it names (a Chinese concept word stands for its concept only; an English one is
    also a word) and per vocabulary meaning."""
    lowered = PATH.sub(" ", text.lower())
    chinese: list[tuple[int, int]] = []
    found: list[str] = []
    for name, (start, end) in _spans(lowered, {n: c.words for n, c in terms.concepts.items()}):
        found += [f"c:{name}", f"n:{name}"]
        if not lowered[start:end].isascii():
            chinese.append((start, end))
    asking = terms.computing()
    for _, (start, end) in _spans(lowered, {"": asking}):
        chinese.append((start, end))
    # A quantile is a quantile of durations.
    if any(term_pattern(word).search(lowered) for word in terms.quantiles):
        found += [f"c:{LATENCY}", f"n:{LATENCY}"]
    for start, end in chinese:
        lowered = lowered[:start] + " " * (end - start) + lowered[end:]
    return list(dict.fromkeys([*words(lowered), *found, *_meanings(text, vocabulary)]))


def _meanings(text: str, vocabulary: Vocabulary | None) -> list[str]:
    if vocabulary is None:
        return []
    return sorted(
        {f"g:{group}" for group, _ in query_terms(text, vocabulary=vocabulary)}
        | {f"t:{term}" for term, _ in query_terms(text, vocabulary=vocabulary, table="ops_terms")}
    )


def _templated(vocabulary: Vocabulary | None, topics: set[str]) -> set[str]:
    """The metrics the vocabulary's PromQL templates of the topics query."""
    if vocabulary is None:
        return set()
    return {
        match.group("metric")
        for topic in topics
        for template in vocabulary.promql_topics.get(topic, [])
        for match in TEMPLATE_METRIC.finditer(template)
    }


def _weight(token: str) -> int:
    return MEANING_WEIGHT if token[1:2] == ":" else 1


# --- Words and values --------------------------------------------------------------------------


def _spaced(name: str) -> str:
    """A metric name as words: `node_memory_MemAvailable_bytes` → `node memory MemAvailable bytes`."""
    return name.replace("_", " ").replace(":", " ")


def _spans(lowered: str, table: dict[str, list[str]]) -> list[tuple[str, tuple[int, int]]]:
    """(name, span) of each term of the table in the text, longer terms first, none overlapping."""
    terms = sorted(
        ((name, word.lower()) for name, ws in table.items() for word in ws), key=lambda t: -len(t[1])
    )
    found: list[tuple[str, tuple[int, int]]] = []
    for name, word in terms:
        for match in term_pattern(word).finditer(lowered):
            if all(match.end() <= s or match.start() >= e for _, (s, e) in found):
                found.append((name, match.span()))
    return sorted(found, key=lambda item: item[1][0])


def _without(lowered: str, table: list[str]) -> str:
    """The text with the table's words blanked out."""
    for _, (start, end) in _spans(lowered, {"": table}):
        lowered = lowered[:start] + " " * (end - start) + lowered[end:]
    return lowered


def _any_word(lowered: str, table: list[str]) -> bool:
    return any(term_pattern(word.lower()).search(lowered) for word in table)


def _grouped(lowered: str, by_words: list[str]) -> tuple[str, ...]:
    """The word after each grouping word: `by handler` → handler; `按 datname` → datname."""
    found = []
    for word in by_words:
        # An English word stands alone before its label (`per` of `percent` groups by nothing).
        space = r"\s+" if word.isascii() else r"\s*"
        for match in re.finditer(rf"{re.escape(word.lower())}{space}([a-z_][a-z0-9_]*)", lowered):
            if not word.isascii() or not match.start() or not lowered[match.start() - 1].isalnum():
                found.append(match.group(1))
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _alone(value: str) -> re.Pattern[str]:
    return re.compile(_ALONE_BEFORE + re.escape(value.lower()) + _ALONE_AFTER)


def _naming_values(metric_catalog: MetricCatalog) -> dict[str, str]:
    """value → its first label, for the values that can name a subject."""
    named: dict[str, str] = {}
    for label, values in metric_catalog.values.items():
        for value in values:
            if (len(value) >= MIN_VALUE_CHARS or value.startswith("/")) and not _number(value):
                named.setdefault(value, label)
    return named


def _number(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def _words_naming_nothing(
    text: str,
    *,
    metric_catalog: MetricCatalog,
    vocabulary: Vocabulary | None,
    terms: MetricTerms,
    known_names: frozenset[str],
) -> list[str]:
    """Latin words of the question that no metric name, HELP text, label or label value of the
    catalog, no known service or alert and no word of the vocabulary or the terms has: `redis` asked
    of a stack without Redis. Words shorter than `MIN_NAMING_CHARS` are never counted. In a question
    written in English only, a word counts where a subject stands: after `of`, `on`, `for` … or right
    before an operations word ("consumer lag of kafka", "redis memory"), not any English word."""
    known = _known_stems(metric_catalog, vocabulary, terms)
    lowered_names = {name.lower() for name in known_names}
    found = [path for path in PATH.findall(text) if path not in _naming_values(metric_catalog)]
    text = PATH.sub(" ", text)
    for _, value in subjects_named(text, metric_catalog=metric_catalog):
        text = _alone(value).sub(" ", text.lower())
    lowered = text.lower()
    english = not CJK.search(text)
    concept_starts = {
        start for _, (start, _) in _spans(lowered, {n: c.words for n, c in terms.concepts.items()})
    }
    before = re.compile(rf"\b(?:{'|'.join(map(re.escape, terms.subject_after))})\s+(?:the\s+)?$")
    for match in LATIN_WORD.finditer(text):
        word = match.group(0).lower()
        if len(word) < MIN_NAMING_CHARS or word in lowered_names or word in known:
            continue
        if STEMMER.stemWord(word) in known or metric_catalog.entry(match.group(0)):
            continue
        after = len(lowered[match.end() :]) - len(lowered[match.end() :].lstrip())
        if english and not (before.search(lowered[: match.start()]) or match.end() + after in concept_starts):
            continue
        found.append(match.group(0))
    return found


def _known_stems(
    metric_catalog: MetricCatalog, vocabulary: Vocabulary | None, terms: MetricTerms
) -> frozenset[str]:
    key = (id(metric_catalog), id(vocabulary), id(terms))
    cached = _KNOWN.get(key)
    if cached is not None and cached[0] is metric_catalog:
        return cached[1]
    texts = [f"{_spaced(entry.name)} {entry.help}" for entry in metric_catalog.metrics]
    texts += [f"{label} {' '.join(values)}" for label, values in metric_catalog.values.items()]
    texts += [word for concept in terms.concepts.values() for word in [*concept.words, *concept.parts]]
    texts += [*terms.computing(), *terms.filler]
    # The vocabulary's language (what a question asks, what it wants); its topic words name things
    # only where the catalog has them.
    if vocabulary is not None:
        texts += [
            term for ts in [*vocabulary.intents.values(), *vocabulary.service_aliases.values()] for term in ts
        ]
        texts += [word for ws in vocabulary.asks.model_dump().values() for word in ws]
    known = set()
    for text in texts:
        for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
            known |= {word.lower(), STEMMER.stemWord(word.lower())}
    result = frozenset(known)
    if len(_KNOWN) >= MAX_INDEXES:
        _KNOWN.pop(next(iter(_KNOWN)))
    _KNOWN[key] = (metric_catalog, result)
    return result


_KNOWN: dict[tuple[int, int, int], tuple[MetricCatalog, frozenset[str]]] = {}
