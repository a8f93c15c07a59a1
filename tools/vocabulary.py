"""The world vocabulary: what words mean in the team's system, as data, one file per world.

    groups           topic → terms (synonyms, Chinese and English); the first term is the canonical one
    intents          what a question wants (cause, mitigation, ...) → terms; knowledge retrieval only
    ops_terms        operations concept → its words in either language (磁盘 ↔ disk / filesystem);
                     knowledge retrieval only: a question and a runbook meet on the concept
    asks             the words that say what a question asks, read by the question's focus and so
                     by the planners: `alerts` (it is about alerts: "有哪些告警", and a name right
                     before one is an alert's name), `cause` (why something happens), `guidance`
                     (how to handle it: the runbooks), `status` (how a subject is doing: alone
                     beside a topic, "内存情况怎么样", it asks the current value); and the asks, each with
                     its slot in the answer: existence, value, threshold, trend, history, logs,
                     runbook, list, priority, health, action; and around an action word, `request`
                     (帮我, 把, please: a request to act) and `measure` (率, 次数, alert: the word names
                     a metric or an alert, a topic, not an action). A kind a file leaves out has the shipped
                     file's words, so a world that names its services differently still reads
                     "为什么" and "how"; a kind written as `[]` has none.
    interrogatives   kind of question word → its words (quantity: 多少, how many; which: 哪, which;
                     whether, why, what, when): a question word no ask answers caps the verdict
                     (`diagnosis.pipeline.asks.unread`); language, so a world's file adds to them
    topic_labels     topic → Chinese label used in claim text (never a fact token)
    related_topics   topic → topics whose evidence explains it (memory → gc, oom)
    alert_topics     alert name → topic, for alerts whose name is not itself a group term
    promql_topics    topic → PromQL templates with a `{service}` placeholder (`topic_queries`)
    service_aliases  service → other names for it (订单服务)
    categories       ordered [{category, groups}]: the fault category of a past case
    remedies         terms that name a change to the system (restart, roll back, drain, 回滚, 停掉 …): never
                     recommended, whatever text suggests it
    always_firing    words a rule or its annotations use for an alert that fires by design (dead man's
                     switch, watchdog, "always firing", 始终触发): such an alert is named as such and
                     never ranked first (with `severity="none"` or a constant `expr`, also without them)
    evidence_actions terms that name gathering evidence (check, compare, 查看, 核对 …): what a
                     recommended action must be
    slow_threshold_ms  a log line stating a longer duration is a slow one
    log_measures     the words that ask for log lines counted by what their format says: by path,
                     by status, by class, how many, the slowest, and the words for slow lines
                     (慢查询, slow requests); language, not names: a kind a file leaves out has the
                     shipped file's words

Remedies, evidence actions, always-firing words and intents are language, not a world's names: a world's file adds to
the shipped terms, it never goes without them (guards hold on any world; a runbook's "Diagnosis"
section is its steps in any world).

The demo world ships `data/demo_world/vocabulary.json`. `DIAGNOSIS_VOCABULARY_FILE` (settings
`DIAGNOSIS["VOCABULARY_FILE"]`, read by `tools.configured_vocabulary`; this module never reads settings) names another file, which replaces it, or extends the file its
`extends` names (a path relative to it, or `true` for the shipped one): groups and aliases gain
terms, the other tables gain or replace entries. Anything the file leaves out has a harmless
default, so a new group needs no code. A file that does not validate raises `VocabularyError`
naming the file and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from tools.promql import SUBJECT_PLACEHOLDER, Carrier, subject_query, syntax_error

DEFAULT_VOCABULARY_FILE = Path(__file__).parent / "data" / "demo_world" / "vocabulary.json"
# A topic without a label of its own is still named in Chinese, with no fact token.
FALLBACK_LABEL = "相关"


class VocabularyError(ValueError):
    """A vocabulary file that cannot be read or does not validate."""


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")

    category: str = Field(min_length=1, max_length=32)
    groups: list[str]


def _strip_empty(terms: list[str]) -> list[str]:
    return [term for term in terms if term.strip()]


@lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    """The shipped file's tables: the defaults of the language-level ones (asks, intents, remedies,
    evidence actions), which every world has whatever its own file says."""
    return json.loads(DEFAULT_VOCABULARY_FILE.read_text(encoding="utf-8"))


def _shipped_words(kind: str) -> Callable[[], list[str]]:
    return lambda: list(_shipped().get("asks", {}).get(kind, []))


class Asks(BaseModel):
    """The words of each kind of ask (the module docstring's `asks`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    alerts: list[str] = Field(default_factory=_shipped_words("alerts"))
    cause: list[str] = Field(default_factory=_shipped_words("cause"))
    # What changed (before an alert, since a time): the moves an investigation found, by time.
    change: list[str] = Field(default_factory=_shipped_words("change"))
    guidance: list[str] = Field(default_factory=_shipped_words("guidance"))
    status: list[str] = Field(default_factory=_shipped_words("status"))
    # The asks, each answered by its own slot (`diagnosis.pipeline.asks`, one module per kind).
    existence: list[str] = Field(default_factory=_shipped_words("existence"))
    value: list[str] = Field(default_factory=_shipped_words("value"))
    threshold: list[str] = Field(default_factory=_shipped_words("threshold"))
    trend: list[str] = Field(default_factory=_shipped_words("trend"))
    history: list[str] = Field(default_factory=_shipped_words("history"))
    logs: list[str] = Field(default_factory=_shipped_words("logs"))
    runbook: list[str] = Field(default_factory=_shipped_words("runbook"))
    # `list` in the file; not a field name, which would shadow the builtin in this class body.
    listing: list[str] = Field(default_factory=_shipped_words("list"), alias="list")
    priority: list[str] = Field(default_factory=_shipped_words("priority"))
    # Which alert fired first (and when), over the asked window.
    first: list[str] = Field(default_factory=_shipped_words("first"))
    health: list[str] = Field(default_factory=_shipped_words("health"))
    action: list[str] = Field(default_factory=_shipped_words("action"))
    # Around an action word: words that frame it as a request to act ("帮我", "把 …", "please"), and
    # words after it that make it a topic instead (回滚率, 重启次数, "the rollback alert").
    request: list[str] = Field(default_factory=_shipped_words("request"))
    measure: list[str] = Field(default_factory=_shipped_words("measure"))

    @field_validator("*")
    @classmethod
    def _no_empty_words(cls, words: list[str]) -> list[str]:
        return _strip_empty(words)

    def extended_by(self, other: Asks) -> Asks:
        """A kind the other file writes gains its words; one it leaves out stays as it is here."""
        mine = self.model_dump()
        return Asks(
            **{
                kind: list(dict.fromkeys([*mine[kind], *words]))
                if kind in other.model_fields_set
                else mine[kind]
                for kind, words in other.model_dump().items()
            }
        )


def _shipped_measure_words(kind: str) -> Callable[[], list[str]]:
    return lambda: list(_shipped().get("log_measures", {}).get(kind, []))


class LogMeasures(BaseModel):
    """The words that ask for counted log lines (`diagnosis.pipeline.asks.logs`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    path: list[str] = Field(default_factory=_shipped_measure_words("path"))
    status: list[str] = Field(default_factory=_shipped_measure_words("status"))
    # `class` in the file; not a field name, which is a keyword.
    kinds: list[str] = Field(default_factory=_shipped_measure_words("class"), alias="class")
    count: list[str] = Field(default_factory=_shipped_measure_words("count"))
    slowest: list[str] = Field(default_factory=_shipped_measure_words("slowest"))
    slow_lines: list[str] = Field(default_factory=_shipped_measure_words("slow_lines"))
    # A ratio or a rate is asked of metrics, never of counted lines ("5xx 占比").
    ratio: list[str] = Field(default_factory=_shipped_measure_words("ratio"))

    @field_validator("*")
    @classmethod
    def _no_empty_words(cls, words: list[str]) -> list[str]:
        return _strip_empty(words)


class Vocabulary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    groups: dict[str, list[str]] = {}
    intents: dict[str, list[str]] = {}
    ops_terms: dict[str, list[str]] = {}
    asks: Asks = Field(default_factory=Asks)
    interrogatives: dict[str, list[str]] = Field(
        default_factory=lambda: {
            name: list(words) for name, words in _shipped().get("interrogatives", {}).items()
        }
    )
    topic_labels: dict[str, str] = {}
    related_topics: dict[str, list[str]] = {}
    alert_topics: dict[str, str] = {}
    promql_topics: dict[str, list[str]] = {}
    service_aliases: dict[str, list[str]] = {}
    categories: list[Category] = []
    remedies: list[str] = []
    evidence_actions: list[str] = []
    always_firing: list[str] = []
    slow_threshold_ms: int = Field(default=1000, gt=0)
    log_measures: LogMeasures = Field(default_factory=LogMeasures)
    extends: bool | str | None = None

    @field_validator("promql_topics", mode="before")
    @classmethod
    def _queries_listed(cls, table: object) -> object:
        """One query may be written as a string."""
        if isinstance(table, dict):
            return {topic: [q] if isinstance(q, str) else q for topic, q in table.items()}
        return table

    @field_validator("groups", "intents", "ops_terms", "service_aliases", "interrogatives")
    @classmethod
    def _no_empty_terms(cls, table: dict[str, list[str]]) -> dict[str, list[str]]:
        return {name: _strip_empty(terms) for name, terms in table.items()}

    @field_validator("intents", "interrogatives")
    @classmethod
    def _with_shipped_words(cls, table: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        """What a question wants, what a runbook's heading says its section holds (Diagnosis,
        Mitigation, 处置) and the question words are language, not a world's names: a world's file
        adds to the shipped ones."""
        merged = {name: list(terms) for name, terms in _shipped().get(info.field_name, {}).items()}
        for name, terms in table.items():
            merged[name] = list(dict.fromkeys([*merged.get(name, []), *terms]))
        return merged

    @field_validator("remedies", "evidence_actions", "always_firing")
    @classmethod
    def _no_empty_words(cls, terms: list[str]) -> list[str]:
        return [term for term in terms if term.strip()]

    def interrogative_words(self) -> list[str]:
        """Every question word, whatever it asks."""
        return [word for words in self.interrogatives.values() for word in words]

    def remedy_terms(self) -> tuple[str, ...]:
        return _with_shipped(self.remedies, "remedies")

    def evidence_action_terms(self) -> tuple[str, ...]:
        return _with_shipped(self.evidence_actions, "evidence_actions")

    def always_firing_terms(self) -> tuple[str, ...]:
        return _with_shipped(self.always_firing, "always_firing")

    def canonical_term(self, group: str) -> str:
        terms = self.groups.get(group) or [group]
        return terms[0]

    def label(self, topic: str) -> str:
        return self.topic_labels.get(topic, FALLBACK_LABEL)

    def related(self, topic: str) -> list[str]:
        return [t for t in self.related_topics.get(topic, []) if t in self.groups]

    def topic_queries(self, topic: str, *, service: str, carrier: Carrier | None) -> list[str]:
        """The topic's PromQL queries on one service, each matcher on the label that carries the service
        in that metric's series; a template none of whose labels carries it is left out."""
        queries = (
            subject_query(t, subject=service, carrier=carrier) for t in self.promql_topics.get(topic, [])
        )
        return [query for query in queries if query]

    def without_demo_names(self) -> Vocabulary:
        """The shipped file's words without its PromQL templates, its services' other names and its
        alerts' topics: those name the demo world's series, services and alerts, and apply only there
        (a team's world has its own, or none; an alias or an alert name would be known in any world)."""
        return self.model_copy(update={"promql_topics": {}, "service_aliases": {}, "alert_topics": {}})

    def extended_by(self, other: Vocabulary) -> Vocabulary:
        def terms(mine: dict[str, list[str]], theirs: dict[str, list[str]]) -> dict[str, list[str]]:
            merged = {name: list(values) for name, values in mine.items()}
            for name, values in theirs.items():
                merged[name] = list(dict.fromkeys([*merged.get(name, []), *values]))
            return merged

        extra_categories = {c.category for c in other.categories}
        return Vocabulary(
            groups=terms(self.groups, other.groups),
            intents=terms(self.intents, other.intents),
            interrogatives=terms(self.interrogatives, other.interrogatives),
            ops_terms=terms(self.ops_terms, other.ops_terms),
            asks=self.asks.extended_by(other.asks),
            topic_labels=self.topic_labels | other.topic_labels,
            related_topics=self.related_topics | other.related_topics,
            alert_topics=self.alert_topics | other.alert_topics,
            promql_topics=self.promql_topics | other.promql_topics,
            service_aliases=terms(self.service_aliases, other.service_aliases),
            remedies=list(dict.fromkeys([*self.remedies, *other.remedies])),
            evidence_actions=list(dict.fromkeys([*self.evidence_actions, *other.evidence_actions])),
            always_firing=list(dict.fromkeys([*self.always_firing, *other.always_firing])),
            slow_threshold_ms=other.slow_threshold_ms
            if "slow_threshold_ms" in other.model_fields_set
            else self.slow_threshold_ms,
            log_measures=other.log_measures
            if "log_measures" in other.model_fields_set
            else self.log_measures,
            categories=[
                *other.categories,
                *(c for c in self.categories if c.category not in extra_categories),
            ],
        )


@lru_cache(maxsize=16)
def vocabulary_load(path: Path, stamp: int = 0) -> Vocabulary:
    """The vocabulary of one file (`stamp`, its mtime, keys the cache so an edited file is re-read)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        vocabulary = Vocabulary.model_validate(raw)
    except OSError as exc:
        raise VocabularyError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise VocabularyError(f"{path}: not valid JSON: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in exc.errors()
        )
        raise VocabularyError(f"{path}: {problems}") from exc
    base_path = _extended_file(path, vocabulary)
    if base_path is not None:
        base_path = base_path.resolve()
        if base_path == path.resolve():
            raise VocabularyError(f"{path}: extends: a file cannot extend itself")
        base = vocabulary_load(base_path, base_path.stat().st_mtime_ns)
        if base_path.resolve() == DEFAULT_VOCABULARY_FILE.resolve():
            base = base.without_demo_names()
        return base.extended_by(vocabulary)
    return vocabulary


def _with_shipped(terms: list[str], table: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*_shipped().get(table, []), *terms]))


SCHEMA_FILE = Path(__file__).parent / "data" / "vocabulary.schema.json"


def vocabulary_schema() -> dict[str, Any]:
    """The file format as JSON Schema, generated from the model that loads it (`SCHEMA_FILE` holds it)."""
    schema = Vocabulary.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Diagnosis vocabulary",
    } | schema


def vocabulary_checked(path: Path) -> list[str]:
    """The problems of a vocabulary file and of the file it extends, each `FILE:LINE: field:
    message` (every PromQL template of both parsed); none when it loads."""
    return _problems(path, seen=frozenset())


def _problems(path: Path, *, seen: frozenset[Path]) -> list[str]:
    if path.resolve() in seen:
        return [f"{path}: extends: the files extend each other"]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [f"{path}: cannot read: {exc.strerror or exc}"]
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return [f"{path}:{exc.lineno}: not valid JSON: {exc.msg}"]
    try:
        vocabulary = Vocabulary.model_validate(raw)
    except ValidationError as exc:
        return [
            f"{path}:{_line_of(text, error['loc'])}: {'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        ]
    problems = [
        f"{path}:{_line_of(text, ('promql_topics', topic))}: promql_topics.{topic}.{index}: not PromQL: {error}"
        for topic, templates in vocabulary.promql_topics.items()
        for index, template in enumerate(templates)
        if (error := _template_error(template))
    ]
    if problems:
        return problems
    base = _extended_file(path, vocabulary)
    if base is not None and base.resolve() != path.resolve():
        # The file it extends is checked as its own: its templates are sent too.
        problems = _problems(base, seen=seen | {path.resolve()})
        if problems:
            return problems
    try:
        vocabulary_load(path, path.stat().st_mtime_ns)
    except VocabularyError as exc:  # a file extending itself
        return [str(exc)]
    return []


def _extended_file(path: Path, vocabulary: Vocabulary) -> Path | None:
    if not vocabulary.extends:
        return None
    return DEFAULT_VOCABULARY_FILE if vocabulary.extends is True else (path.parent / str(vocabulary.extends))


def _template_error(template: str) -> str | None:
    """What the PromQL parser says of a template on a subject, as it is sent; None when it parses."""
    return syntax_error(template.replace(SUBJECT_PLACEHOLDER, "subject"))


def _line_of(text: str, loc: tuple) -> int:
    """The line of the field an error is about: each key of its path found after the one before it."""
    position = 0
    for part in loc:
        if isinstance(part, str):
            match = re.compile(rf'"{re.escape(part)}"\s*:').search(text, position)
            if match is None:
                break
            position = match.start()
    return text.count("\n", 0, position) + 1
