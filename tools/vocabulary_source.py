"""A starter vocabulary from what a Prometheus server says about its metrics
(`manage.py vocabulary --from-prometheus`): each metric's topic from the words of its name and HELP
text, read against a language table (`data/topic_words.json`: memory ↔ 内存, load ↔ 负载 …), a PromQL
template per metric on the subject's label, and each alerting rule's topic from the metric its `expr`
reads. Django-free: it reads the server's answers, not the server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import promql_parser

from tools.promql import METRIC_NAME, SUBJECT_PLACEHOLDER
from tools.terms import name_parts
from tools.vocabulary import Vocabulary

TOPIC_WORDS_FILE = Path(__file__).parent / "data" / "topic_words.json"
# Templates per topic: the first two are queried for a topic question; the rest are for the reader.
TEMPLATES_PER_TOPIC = 4
# A counter is read as its rate; histogram and summary parts need a quantile a starter cannot choose.
RATE_WINDOW = "5m"
UNREAD_SUFFIXES = ("_bucket", "_count", "_sum", "_created")
# An alerting rule's name kept in the starter: one word of letters, digits, `_ . : -` (`KubePodCrashLooping`,
# `内存告警`). Prometheus takes any text as a name; a starter is read and merged by people, and a
# name with spaces, quotes or line breaks (`kubectl delete ns prod`) is no alert name to suggest.
ALERT_NAME = re.compile(r"[^\W\d][\w.:-]*")


@lru_cache(maxsize=1)
def topic_words() -> dict[str, dict]:
    return json.loads(TOPIC_WORDS_FILE.read_text(encoding="utf-8"))["topics"]


def words_of(text: str) -> list[str]:
    """`node_memory_MemAvailable_bytes` → node memory mem available bytes; HELP text word by word."""
    return [
        word.lower()
        for chunk in re.split(r"[^A-Za-z0-9]+", text)
        for word in [chunk, *name_parts(chunk)]
        if word
    ]


def vocabulary_from_source(
    *, metadata: dict[str, list[dict]], metric_names: Iterable[str], rules: Iterable[dict]
) -> Vocabulary:
    """The starter vocabulary of one server: its metadata (`/api/v1/metadata`), the metric names it
    holds series of and its alerting rules (`/api/v1/rules`)."""
    table = topic_words()
    found: dict[str, list[tuple[tuple, str]]] = {}
    topic_of_metric: dict[str, str] = {}
    for metric in sorted(set(metric_names) | set(metadata)):
        # A name PromQL cannot write unquoted (`a"b`, a line break, Prometheus 3's UTF-8 names) has no
        # template of this form.
        if (
            not METRIC_NAME.fullmatch(metric)
            or metric.endswith(UNREAD_SUFFIXES)
            or metric.startswith("ALERTS")
        ):
            continue
        meta = (metadata.get(metric) or [{}])[0]
        if meta.get("type") in ("histogram", "summary"):
            continue
        topic = _topic(metric, meta.get("help", ""), table)
        if topic is None:
            continue
        topic_of_metric[metric] = topic
        found.setdefault(topic, []).append((_rank(metric, meta, table[topic]), _template(metric, meta)))
    alert_topics = {
        rule["name"]: topic
        for rule in rules
        if ALERT_NAME.fullmatch(str(rule.get("name") or ""))
        and (
            topic := next(
                (topic_of_metric[m] for m in _metrics_of(rule.get("query", "")) if m in topic_of_metric), None
            )
        )
    }
    return Vocabulary(
        groups={topic: list(table[topic]["terms"]) for topic in found},
        topic_labels={topic: table[topic]["label"] for topic in found},
        promql_topics={
            topic: [template for _, template in sorted(templates)[:TEMPLATES_PER_TOPIC]]
            for topic, templates in found.items()
        },
        alert_topics=alert_topics,
    )


def _topic(metric: str, help_text: str, table: dict[str, dict]) -> str | None:
    """The topic of the metric's name words, else of its HELP words, in the table's order."""
    for words in (set(words_of(metric)), set(words_of(help_text))):
        for topic, entry in table.items():
            if words & set(entry["words"]):
                return topic
    return None


def _rank(metric: str, meta: dict, entry: dict) -> tuple:
    """Metrics with one of the topic's first words ahead (in its order), gauges before counters."""
    words = words_of(metric)
    first = next((i for i, word in enumerate(entry["first"]) if word in words), len(entry["first"]))
    return (first, _is_counter(metric, meta), len(metric), metric)


def _is_counter(metric: str, meta: dict) -> bool:
    return meta.get("type") == "counter" or metric.endswith("_total")


def _template(metric: str, meta: dict) -> str:
    selector = f'{metric}{{service="{SUBJECT_PLACEHOLDER}"}}'
    return f"rate({selector}[{RATE_WINDOW}])" if _is_counter(metric, meta) else selector


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
