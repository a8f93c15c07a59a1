"""What a question is about: the services and alerts it names, known or not, its topics.

Names come from the inventory (what the sources know now, `tools.inventory`) and the world
vocabulary's aliases, never from Python: a name matches tolerantly (case, `-`/`_`/space, CamelCase
humps, Chinese aliases). A word shaped like a name (`billing-service`, `KafkaConsumerLag`) that the
inventory does not know is an unknown subject, reported with up to three nearest known names.

Pure code over plain data: the Django adapter asks the sources once per session
(`diagnosis.services.world`) and hands the round a `World`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property, lru_cache

from rapidfuzz import fuzz, process

from diagnosis.pipeline.facts import FactNames
from tools.metric_catalog import MetricCatalog
from tools.metric_search import metric_terms
from tools.promql import Carrier, LabelNames
from tools.signal_roles import MetricFamily
from tools.software_names import software_aliases
from tools.source_names import SOURCE_NAMES
from tools.terms import asks_in, name_parts, query_terms, term_pattern
from tools.vocabulary import Vocabulary

NEAREST_LIMIT = 3
NEAREST_MIN_SCORE = 60
# Shapes of a name, not names: a hyphenated/snake_case word, a CamelCase word with two humps.
COMPOUND_WORD = re.compile(
    r"(?<![A-Za-z0-9_.\-/])[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+(?![A-Za-z0-9_\-])"
)
CAMEL_WORD = re.compile(r"(?<![A-Za-z0-9_\-])[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+(?![A-Za-z0-9_\-])")
# `service="…"` in a question: a label value, quoted as PromQL quotes it (`\"` and `\\` escaped).
LABEL_VALUE = re.compile(r'(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
SERVICE_WORD_AFTER = re.compile(r"^\s*(?:服务|service\b|svc\b)", re.IGNORECASE)
# A plain word (`shipping`) is a name only where a name stands: before a service or alert word, after
# "service", and in a Chinese question before "的" or opening a clause that goes on in Chinese.
PLAIN_WORD = re.compile(r"(?<![A-Za-z0-9_.\-/:])[A-Za-z][A-Za-z0-9]{2,}(?![A-Za-z0-9_\-/.:])")
SERVICE_WORD_BEFORE = re.compile(r"(?:service|svc)\s+$", re.IGNORECASE)
# "the consumer lag of kafka?": a word after "of" that ends the clause names what is asked about.
OF_BEFORE = re.compile(r"(?<![a-z])of\s+(?:the\s+)?$", re.IGNORECASE)
CLAUSE_END_AFTER = re.compile(r"^\s*(?:[，,。；;！!？?.\n]|$)")
CJK = re.compile(r"[\u4e00-\u9fff]")
NAMED_BEFORE_CJK = re.compile(r"^\s*(?:的|[\u4e00-\u9fff])")
CLAUSE_START = re.compile(r"(?:^|[，,。；;！!？?\n])\s*$")
NOTHING_UNDERSTOOD = "未能识别问题涉及的服务、告警或主题"


@lru_cache(maxsize=4096)
def name_pattern(name: str) -> re.Pattern[str]:
    """`ledger-service` also as `Ledger_Service` or `ledger service`; `KubePodCrashLooping` as `kube pod crash looping`."""
    parts = [part.lower() for chunk in re.split(r"[-_\s]+", name) for part in name_parts(chunk)]
    if not parts:
        return re.compile(re.escape(name.lower()))
    body = r"[-_\s]*".join(re.escape(part) for part in parts)
    return re.compile(rf"(?<![a-z0-9_])(?<![a-z0-9]-){body}(?![a-z0-9_])(?!-[a-z0-9])", re.IGNORECASE)


def _alert_topics(alert: str, vocabulary: Vocabulary) -> list[str]:
    """An alert's topic: the vocabulary's, else the groups its name is a term of."""
    topic = vocabulary.alert_topics.get(alert)
    if topic:
        return [topic]
    lowered = alert.lower()
    return sorted(
        g for g, terms in vocabulary.groups.items() if any(term_pattern(t).search(lowered) for t in terms)
    )


def folded_name(name: str) -> str:
    """A name without case and separators: `Ledger_Service`, `ledger service` and `ledger-service` are one."""
    return re.sub(r"[-_\s]+", "", name).casefold()


@dataclass(frozen=True)
class Inventory:
    services: frozenset[str] = frozenset()
    alerts: frozenset[str] = frozenset()
    runbooks: frozenset[str] = frozenset()
    # Metric names the metrics source holds: a question naming one names a series, not a service.
    metrics: frozenset[str] = frozenset()
    # Service → its other names (vocabulary `service_aliases`); an alias also makes the service known.
    aliases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Topic → the topics that explain it (vocabulary `related_topics`), and each known alert's topics.
    related: tuple[tuple[str, tuple[str, ...]], ...] = ()
    alert_topics: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def topics_of_alert(self, alert: str) -> set[str]:
        return set(dict(self.alert_topics).get(alert, ()))

    def widened(self, topics: Iterable[str]) -> set[str]:
        """The topics and the topics related to them."""
        related = dict(self.related)
        return {wider for topic in topics for wider in (topic, *related.get(topic, ()))}

    @classmethod
    def build(
        cls,
        *,
        services: Iterable[str],
        alerts: Iterable[str],
        runbooks: Iterable[str] = (),
        metrics: Iterable[str] = (),
        vocabulary: Vocabulary,
    ) -> Inventory:
        services = frozenset(services)
        # The team's own aliases, and the other names of a known service's software (`PostgreSQL` for
        # a job named `postgres`).
        named = software_aliases(services)
        for service, words in vocabulary.service_aliases.items():
            named[service] = (*words, *named.get(service, ()))
        aliases = tuple(sorted((s, tuple(a)) for s, a in named.items()))
        all_alerts = frozenset(alerts) | frozenset(vocabulary.alert_topics)
        return cls(
            services=services | {service for service, _ in aliases},
            alerts=all_alerts,
            runbooks=frozenset(runbooks),
            metrics=frozenset(metrics),
            aliases=aliases,
            related=tuple(sorted((t, tuple(vocabulary.related(t))) for t in vocabulary.groups)),
            alert_topics=tuple(sorted((a, tuple(_alert_topics(a, vocabulary))) for a in all_alerts)),
        )

    def as_dict(self, *, query: str = "") -> dict:
        """The names, and of the (many) metric names those the question writes: what reading it again needs."""
        return {
            "services": sorted(self.services),
            "alerts": sorted(self.alerts),
            "runbooks": sorted(self.runbooks),
            "metrics": sorted(
                word for word in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", query) if word in self.metrics
            ),
        }

    def services_in(self, text: str) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self._spans(text, self.services, with_aliases=True)))

    def alerts_in(self, text: str) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self._spans(text, self.alerts, with_aliases=False)))

    def same_service(self, a: str, b: str) -> bool:
        return folded_name(a) == folded_name(b)

    def nearest(self, name: str, *, kind: str) -> list[str]:
        choices = sorted(self.alerts if kind == "alert" else self.services)
        if kind not in ("alert", "service"):
            choices = sorted(self.services | self.alerts)
        found = process.extract(
            folded_name(name),
            {choice: folded_name(choice) for choice in choices},
            scorer=fuzz.WRatio,
            limit=NEAREST_LIMIT,
            score_cutoff=NEAREST_MIN_SCORE,
        )
        return [choice for _, _, choice in found]

    def _spans(
        self, text: str, names: Iterable[str], *, with_aliases: bool
    ) -> list[tuple[str, tuple[int, int]]]:
        aliases = dict(self.aliases) if with_aliases else {}
        found: list[tuple[str, tuple[int, int]]] = []
        # Longer names first, so `ledger-service-api` is not read as `ledger-service`.
        for name in sorted(names, key=lambda n: -len(n)):
            patterns = [name_pattern(name), *(term_pattern(alias) for alias in aliases.get(name, ()))]
            for pattern in patterns:
                for match in pattern.finditer(text.lower()):
                    if all(match.end() <= s or match.start() >= e for _, (s, e) in found):
                        found.append((name, match.span()))
        return sorted(found, key=lambda item: item[1][0])

    def service_spans(self, text: str) -> list[tuple[int, int]]:
        return [span for _, span in self._spans(text, self.services, with_aliases=True)]

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [
            *self.service_spans(text),
            *(span for _, span in self._spans(text, self.alerts, with_aliases=False)),
        ]


@dataclass(frozen=True)
class World:
    """What a session reads questions and records against, as plain data: the world vocabulary,
    the sources' inventory (asked once per session) and the labels that name a service."""

    vocabulary: Vocabulary
    inventory: Inventory
    service_labels: tuple[str, ...] = ("service",)
    # The sources' "now" and the log source's window: what a question's time words are read against.
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    logs_window_minutes: int = 60
    # Which label of a metric's series carries a subject (`tools.series`), asked of the source.
    carrier: Carrier | None = None
    # The label names of a metric's series, asked of the same source.
    label_names: LabelNames | None = None
    # The metrics source's families with their TYPE and HELP (`/api/v1/metadata`): what an
    # investigation picks its key signals from.
    families: tuple[MetricFamily, ...] = ()
    # What the metrics source holds (`tools.metric_catalog`), read with the inventory; empty without one.
    metric_catalog: MetricCatalog = field(default_factory=MetricCatalog)
    # A series source answers PromQL (Prometheus): the catalog's queries can be sent.
    series_queried: bool = False

    @cached_property
    def fact_names(self) -> FactNames:
        """Every name the sources know (and the vocabulary's aliases): each a fact token in any shape."""
        inventory = self.inventory
        return FactNames.of(
            [*inventory.services, *inventory.alerts, *inventory.runbooks],
            aliases=[(alias, service) for service, aliases in inventory.aliases for alias in aliases],
        )

    def focus_of(self, *, query: str, excluded: Iterable[str] = ()) -> QuestionFocus:
        focus = question_focus(
            query=query,
            inventory=self.inventory,
            vocabulary=self.vocabulary,
            excluded=excluded,
            service_labels=self.service_labels,
            catalog_values=frozenset(
                value.casefold() for values in self.metric_catalog.values.values() for value in values
            ),
        )
        # A label value the metric catalog holds (a database's `datname`) is a subject the source knows
        # (§22), not an unknown service.
        held = tuple(u for u in focus.unknown if not self.metric_catalog.labels_with(u.name))
        return focus if held == focus.unknown else replace(focus, unknown=held)

    def measured_focus(self, focus: QuestionFocus) -> QuestionFocus:
        """The focus of a question a quantity of the catalog answers: a word its metrics' names or HELP
        use (`PostgreSQL`, `maxmemory`) names what the quantity is of, not an unknown service or alert."""
        held = tuple(u for u in focus.unknown if not self.metric_catalog.says(u.name))
        return replace(focus, measured=True, unknown=held)


@dataclass(frozen=True)
class UnknownName:
    name: str
    kind: str  # service / alert / either
    nearest: tuple[str, ...]

    def note(self) -> str:
        kind = {"service": "服务", "alert": "告警"}.get(self.kind, "服务或告警")
        text = f"未找到名为 {self.name} 的{kind}"
        if self.nearest:
            text += f"（最接近的已知名称：{'、'.join(self.nearest)}）"
        return text


@dataclass(frozen=True)
class QuestionFocus:
    services: tuple[str, ...] = ()
    alerts: tuple[str, ...] = ()
    unknown: tuple[UnknownName, ...] = ()
    topics: tuple[str, ...] = ()
    lists_alerts: bool = False
    asks_cause: bool = False
    asks_guidance: bool = False
    # Its words name a quantity of the metric catalog (a rate, a p99, a ratio): set by the asks.
    measured: bool = False
    examples: tuple[str, ...] = field(default=(), compare=False)

    @property
    def names_subjects(self) -> bool:
        return bool(self.services or self.alerts or self.unknown)

    @property
    def understood(self) -> bool:
        return (
            self.names_subjects or bool(self.topics) or self.lists_alerts or self.asks_guidance or self.measured
        )

    @property
    def unknown_services(self) -> list[str]:
        return [u.name for u in self.unknown if u.kind != "alert"]

    @property
    def unknown_alerts(self) -> list[str]:
        return [u.name for u in self.unknown if u.kind == "alert"]

    def notes(self) -> list[str]:
        """What code tells the user about the question itself, before any evidence."""
        if not self.understood:
            return [f"{NOTHING_UNDERSTOOD}。可以这样问：{'；'.join(self.examples)}"]
        return [unknown.note() for unknown in self.unknown]

    def as_dict(self) -> dict:
        return {
            "services": list(self.services),
            "alerts": list(self.alerts),
            "unknown": [{"name": u.name, "kind": u.kind, "nearest": list(u.nearest)} for u in self.unknown],
            "topics": list(self.topics),
            "lists_alerts": self.lists_alerts,
            "asks_cause": self.asks_cause,
            "measured": self.measured,
            "understood": self.understood,
        }


def question_focus(
    *,
    query: str,
    inventory: Inventory,
    vocabulary: Vocabulary,
    excluded: Iterable[str] = (),
    service_labels: Iterable[str] = (),
    catalog_values: frozenset[str] = frozenset(),
) -> QuestionFocus:
    """Services, alerts (known and unknown) and topics the question asks about, minus what it excludes.

    A quoted value of a service label (`service="…"`, as an AIOps alert question writes its alert's
    label) is one whole subject: the known service it equals (case and separators aside), else an
    unknown service, never a known name it merely contains (`web-api"} or vector(1)` for `web-api`); other
    quoted label values are no subject."""
    text = query
    for topic in excluded:
        text = text.replace(topic, " ")
    quoted = list(LABEL_VALUE.finditer(text))
    # Other labels' values (`pod="…"`) name no subject at all: a pod named after a service is no ask.
    text = _masked(text, [match.span() for match in quoted])
    labelled = [match for match in quoted if match.group(1) in set(service_labels)]
    services = inventory.services_in(text)
    alerts = inventory.alerts_in(text)
    masked = _masked(text, inventory.spans(text))
    unknown = []
    for match in labelled:
        value = re.sub(r"\\(.)", r"\1", match.group(2))
        same = [name for name in sorted(inventory.services) if folded_name(name) == folded_name(value)]
        if same:
            services.append(same[0])
        elif value.strip():
            unknown.append(UnknownName(value, "service", tuple(inventory.nearest(value, kind="service"))))
    for candidate in _unknown_names(masked, inventory, vocabulary):
        # `check-out` is `checkout`: separators never make a name unknown.
        same = [
            name
            for name in inventory.services | inventory.alerts
            if folded_name(name) == folded_name(candidate.name)
        ]
        # "the rollback alert": the one known alert whose name has that word (none or several: unknown).
        same = same or (_alert_with_word(candidate, inventory) if candidate.kind == "alert" else [])
        # A value the metric catalog holds (a database's `datname`, a probe's target) is a subject of the
        # series that carry it (`tools.metric_search`), never an unknown service.
        if not same and candidate.name.casefold() in catalog_values:
            continue
        if not same:
            unknown.append(candidate)
        elif same[0] in inventory.alerts:
            alerts.append(same[0])
        else:
            services.append(same[0])
    # A service's name is not a topic ("postgres" the service, not the database topic).
    topic_text = _masked(text, inventory.service_spans(text))
    topics = [
        group
        for group, _ in sorted(query_terms(topic_text, vocabulary=vocabulary), key=lambda term: term[1][0])
    ]
    topics += [topic for alert in alerts if (topic := vocabulary.alert_topics.get(alert))]
    asks = asks_in(query, vocabulary=vocabulary)
    return QuestionFocus(
        services=tuple(services),
        alerts=tuple(alerts),
        unknown=tuple(unknown),
        topics=tuple(t for t in dict.fromkeys(topics) if t in vocabulary.groups),
        lists_alerts="alerts" in asks,
        asks_cause="cause" in asks,
        asks_guidance="guidance" in asks,
        examples=_examples(inventory),
    )


def _masked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _unknown_names(text: str, inventory: Inventory, vocabulary: Vocabulary) -> list[UnknownName]:
    terms = [
        term for table in (vocabulary.groups, vocabulary.intents) for ts in table.values() for term in ts
    ]
    unknown: dict[str, UnknownName] = {}
    for pattern, default_kind in ((COMPOUND_WORD, "service"), (CAMEL_WORD, "alert")):
        for match in pattern.finditer(text):
            word = match.group(0)
            # A metric the source holds is a series the question names (`node_load1`).
            if word in inventory.metrics:
                continue
            # A topic term (a connection pool, OutOfMemoryError) is what the question is about, not a subject.
            if any(term_pattern(term).search(word.lower()) for term in terms):
                continue
            after = text[match.end() :]
            kind = (
                "alert"
                if _starts_with_alert_word(after, vocabulary)
                else "service"
                if SERVICE_WORD_AFTER.match(after)
                else default_kind
            )
            unknown.setdefault(word, UnknownName(word, kind, tuple(inventory.nearest(word, kind=kind))))
    for word, kind in _plain_names(text, vocabulary):
        if word not in inventory.metrics:
            unknown.setdefault(word, UnknownName(word, kind, tuple(inventory.nearest(word, kind=kind))))
    return list(unknown.values())


def _alert_with_word(candidate: UnknownName, inventory: Inventory) -> list[str]:
    word = candidate.name.casefold()
    having = [alert for alert in inventory.alerts if word in {part.casefold() for part in name_parts(alert)}]
    return having if len(having) == 1 else []


def _plain_names(text: str, vocabulary: Vocabulary) -> list[tuple[str, str]]:
    """(word, service or alert) of each plain word standing where a name stands, that no word of the
    vocabulary covers: "shipping 为什么慢", "the shipping service", "the rollback alert", "the lag of
    kafka?"."""
    covered = _vocabulary_spans(text, vocabulary)
    chinese = bool(CJK.search(text))
    # A word that names no subject ("how many of each?") never stands for one.
    function_words = {word.casefold() for word in metric_terms().filler}
    names = []
    for match in PLAIN_WORD.finditer(text):
        if any(start <= match.start() and match.end() <= end for start, end in covered):
            continue
        if match.group(0).casefold() in function_words:
            continue
        before, after = text[: match.start()], text[match.end() :]
        if _starts_with_alert_word(after, vocabulary) and (chinese or before.lower().endswith("the ")):
            names.append((match.group(0), "alert"))
        elif (
            SERVICE_WORD_AFTER.match(after)
            or SERVICE_WORD_BEFORE.search(before)
            or (OF_BEFORE.search(before) and CLAUSE_END_AFTER.match(after))
            or (chinese and NAMED_BEFORE_CJK.match(after) and (after.lstrip().startswith("的") or CLAUSE_START.search(before)))
        ):
            names.append((match.group(0), "service"))
    return names


def _vocabulary_spans(text: str, vocabulary: Vocabulary) -> list[tuple[int, int]]:
    """Where the text uses a word of the vocabulary (a topic, an intent, an ops term, an ask or question
    word): what it says about a subject, never a subject's name."""
    lowered = text.lower()
    words = [
        *(term for table in (vocabulary.groups, vocabulary.intents, vocabulary.ops_terms) for ts in table.values() for term in ts),
        # An action word may name an alert ("the rollback alert"): it covers no name.
        *(word for kind, words in vocabulary.asks.model_dump().items() if kind != "action" for word in words),
        *vocabulary.interrogative_words(),
        *(alias for aliases in vocabulary.service_aliases.values() for alias in aliases),
        # The sources themselves (Prometheus, Loki): where the answer comes from, not what it is about.
        *SOURCE_NAMES.values(),
    ]
    return [match.span() for word in words for match in term_pattern(word).finditer(lowered)]


def _starts_with_alert_word(text: str, vocabulary: Vocabulary) -> bool:
    """Whether the text starts with an alert word: in "KafkaLag 告警" the name is an alert's."""
    lowered = text.lstrip().lower()
    return any(term_pattern(word).match(lowered) for word in vocabulary.asks.alerts)


def _examples(inventory: Inventory) -> tuple[str, ...]:
    examples = ["「现在有哪些告警？」"]
    if inventory.services:
        examples.append(f"「{min(inventory.services)} 为什么响应慢？」")
    if inventory.alerts:
        examples.append(f"「只确认是否存在 {min(inventory.alerts)} 告警」")
    return tuple(examples)
