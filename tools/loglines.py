"""Log lines with their meaning, Django-free: the tools, the rules engine and the
pipeline's label check all read a line through these functions, so none can call a line what it is not.

- `level_of`: the level from the stream's labels, else parsed from the line (JSON, logfmt, glog
  `E1201`, `[LEVEL]`, the bare `LEVEL` of Java / Python logger formats).
- `has_word` / `logql_words`: whole-word keyword matching, English words and the parts of CamelCase
  and snake_case tokens, never inside another token (`slow` is not in `slowvm1`).
- `has_property`: the rule a label needs (error: level ≥ ERROR; timeout: a failure phrase; slow: a
  duration above the vocabulary's threshold or the standalone word; any other topic: one of its terms).
- `patterns_mined`: lines grouped by template with Drain3, each with its lines in the order given.

A line's format (`tools.logformats`) says its level where it has its own way (PostgreSQL's `LOG:`,
Redis's `#`, nginx's `[error]`) and its duration (PostgreSQL's `duration:`, an access log's request
time): a line in a known format is slow by that duration only, not by any number with a unit in it.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from decimal import Decimal

from drain3 import TemplateMiner
from drain3.masking import MaskingInstruction
from drain3.template_miner_config import TemplateMinerConfig

from tools.logformats import NGINX_ERROR, PLAIN, POSTGRES, REDIS, fields_of
from tools.terms import name_parts
from tools.vocabulary import Vocabulary

# Drain3 announces every miner it starts at INFO; one per answer is noise, not news.
logging.getLogger("drain3.template_miner").setLevel(logging.WARNING)

LEVEL_LABELS = ("level", "detected_level", "severity")
# Level names as sources write them, to the one name each is shown as.
LEVEL_NAMES = {
    "error": "ERROR",
    "err": "ERROR",
    "e": "ERROR",
    "fatal": "FATAL",
    "f": "FATAL",
    "critical": "CRITICAL",
    "crit": "CRITICAL",
    "alert": "CRITICAL",
    "emerg": "FATAL",
    "panic": "FATAL",
    "severe": "ERROR",
    "warning": "WARN",
    "warn": "WARN",
    "w": "WARN",
    "notice": "INFO",
    "info": "INFO",
    "i": "INFO",
    "debug": "DEBUG",
    "d": "DEBUG",
    "trace": "TRACE",
    "fine": "DEBUG",
}
ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL"})
# LogQL for errors: a level label's values that name an error level (Loki matches `=~` whole, case
# aside), and the words a line states its error level in when no label keeps it (glog's `E0102 `).
ERROR_LEVEL_VALUES = (
    "(?i)(" + "|".join(raw for raw, name in LEVEL_NAMES.items() if name in ERROR_LEVELS) + ")"
)
ERROR_IN_LINE = r"(?i:error|err|fatal|critical|crit|severe|panic)|^E\d{4} |^F\d{4} "
JSON_LEVEL_KEYS = ("level", "lvl", "severity", "loglevel", "log.level", "levelname")
LOGFMT_LEVEL = re.compile(r'(?:^|\s)(?:level|lvl|severity)="?([A-Za-z]+)"?(?=\s|$)', re.IGNORECASE)
GLOG_LEVEL = re.compile(r"^([IWEF])\d{4} \d{2}:\d{2}:\d{2}")
BRACKET_LEVEL = re.compile(
    r"[\[<(](FATAL|CRITICAL|CRIT|ERROR|ERR|WARN(?:ING)?|INFO|NOTICE|DEBUG|TRACE)[\])>]", re.IGNORECASE
)
# Logger formats write the level in capitals as a word of its own (`2017-05-16 00:00:00.008 25746 INFO
# nova.osapi…`, `ERROR:root:…`, `… - WARN  [QuorumPeer…]`); lower case is message text, not a level.
BARE_LEVEL = re.compile(
    r"(?<![A-Za-z0-9_.])(FATAL|CRITICAL|ERROR|WARN(?:ING)?|INFO|NOTICE|DEBUG|TRACE)(?![A-Za-z0-9_])"
)
# The head of a line a logger writes its level in, before the message begins.
LEVEL_HEAD = 120

# A number with its separators (`00:00:04.500`, `2017-05-16`, `3/3`) is one word: `500` is not in a time.
TOKEN = re.compile(r"\d+(?:[.:,/-]\d+)+(?![A-Za-z0-9])|[A-Za-z0-9]+")
NUMBER_WORD = re.compile(r"\d+(?:[.:,/-]\d+)+")
# A failure of waiting: `timed out`, `time out`, `timeout … exceeded`, `deadline exceeded`,
# `*TimeoutException`, `timeout after <duration>`, `ETIMEDOUT`, `i/o timeout`, `超时`.
TIMEOUT_FAILURE = re.compile(
    r"(?<![A-Za-z])(?:timed[\s_-]?out|time[\s_-]out)(?![A-Za-z])"
    r"|(?<![A-Za-z])timeout\b[^.;\n]{0,40}?\bexceeded\b"
    r"|(?<![A-Za-z])deadline[\s_-]exceeded(?![A-Za-z])"
    r"|Timeout(?:Exception|Error)\b"
    r"|(?<![A-Za-z])timeout after \d"
    r"|(?<![A-Za-z])(?:ETIMEDOUT|i/o timeout)(?![A-Za-z])"
    r"|超时",
    re.IGNORECASE,
)
DURATION = re.compile(
    r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s?(ms|milliseconds?|s|secs?|seconds?|min|minutes?|毫秒|秒|分钟)(?![A-Za-z])",
    re.IGNORECASE,
)
SLOW_WORDS = ("slow", "慢请求", "慢查询", "慢SQL", "慢")
PROPERTY_TOPICS = ("error", "timeout", "slow", "slow_query")


def level_name(raw: str) -> str:
    """A level as shown: `warning` → WARN, `err` → ERROR; an unknown word upper-cased as it is."""
    raw = raw.strip()
    return LEVEL_NAMES.get(raw.lower(), raw.upper())


def level_of(line: str, labels: dict[str, str] | None = None) -> str:
    """The line's level: its stream's label, else what the line itself says; "" when neither says."""
    for name in LEVEL_LABELS:
        if (labels or {}).get(name):
            return level_name(labels[name])
    stripped = line.strip()
    if stripped.startswith("{"):
        try:
            fields = json.loads(stripped)
        except ValueError:
            fields = None
        if isinstance(fields, dict):
            found = next((fields[k] for k in JSON_LEVEL_KEYS if isinstance(fields.get(k), str)), "")
            if found:
                return level_name(found)
    if found := LOGFMT_LEVEL.search(stripped):
        return level_name(found[1])
    fields = fields_of(stripped)
    if fields.format in (POSTGRES, REDIS, NGINX_ERROR):
        # A PostgreSQL DETAIL or STATEMENT line continues the one before it: it has no level of its own.
        return level_name(fields.level) if fields.level else ""
    if found := GLOG_LEVEL.match(stripped):
        return level_name(found[1])
    head = stripped[:LEVEL_HEAD]
    if found := BRACKET_LEVEL.search(head):
        return level_name(found[1])
    if found := BARE_LEVEL.search(head):
        return level_name(found[1])
    return ""


def is_error_level(level: str) -> bool:
    return level_name(level) in ERROR_LEVELS


def words_of(text: str) -> list[str]:
    """The words of a text, lower-cased: tokens split at anything but letters and digits (so snake_case
    parts are words) and at CamelCase humps (`SocketTimeoutException` → socket, timeout, exception)."""
    return [
        part.lower()
        for token in TOKEN.findall(text)
        for part in ([token] if NUMBER_WORD.fullmatch(token) else name_parts(token))
    ]


def _is_ascii_term(term: str) -> bool:
    return term.isascii() and bool(re.search(r"[A-Za-z0-9]", term))


def has_word(text: str, term: str) -> bool:
    """Whether the text uses the term as whole words (a phrase: its words in a row); a term with
    Chinese in it matches as a substring, case-insensitively."""
    return _uses(words_of(text), text.lower(), term)


# An English word's inflections count as the word (`errors`, `timeouts`, `restarting`), nothing longer.
INFLECTIONS = ("s", "es", "d", "ed", "ing")
INFLECTION_RE = "(?:" + "|".join(INFLECTIONS) + ")?"


def _same_word(word: str, wanted: str, *, last: bool) -> bool:
    if word == wanted:
        return True
    return (
        last
        and wanted.isalpha()
        and len(wanted) >= 3
        and word.startswith(wanted)
        and word[len(wanted) :] in INFLECTIONS
    )


def _uses(words: list[str], lowered: str, term: str) -> bool:
    if not _is_ascii_term(term):
        return term.lower() in lowered
    wanted = words_of(term)
    return any(
        all(
            _same_word(word, want, last=index == len(wanted) - 1)
            for index, (word, want) in enumerate(zip(words[i : i + len(wanted)], wanted, strict=True))
        )
        for i in range(len(words) - len(wanted) + 1)
    )


def groups_of(text: str, *, vocabulary: Vocabulary) -> set[str]:
    """The vocabulary groups a line is about: those with a term the line uses as whole words."""
    words, lowered = words_of(text), text.lower()
    return {
        group for group, terms in vocabulary.groups.items() if any(_uses(words, lowered, t) for t in terms)
    }


def logql_words(terms: list[str]) -> str:
    """A LogQL (RE2) line-filter regex for any of the terms as whole words: case-insensitive between
    non-alphanumerics, or the term capitalised as a CamelCase part (`Timeout` in `ReadTimeoutError`).
    RE2 has no look-around, so it may admit a little more; the source keeps only what `has_word` does."""
    alternatives = []
    for term in dict.fromkeys(terms):
        if not _is_ascii_term(term):
            alternatives.append(f"(?i:{re.escape(term)})")
            continue
        tokens = re.findall(r"[A-Za-z0-9]+", term)
        phrase = "[^A-Za-z0-9]+".join(re.escape(token) for token in tokens)
        suffix = INFLECTION_RE if tokens[-1].isalpha() and len(tokens[-1]) >= 3 else ""
        alternatives.append(f"(?:^|[^A-Za-z0-9])(?i:{phrase}{suffix})(?:$|[^a-z0-9])")
        if tokens[0][0].isalpha():
            camel = "[^A-Za-z0-9]*".join(re.escape(token[0].upper() + token[1:]) for token in tokens)
            alternatives.append(f"{camel}{suffix}(?:$|[^a-z])")
    return "|".join(alternatives)


def durations_ms(text: str) -> list[Decimal]:
    """Every duration the text states, in milliseconds (`3200ms`, `3.2s`, `2 秒`)."""
    found = []
    for number, unit in DURATION.findall(text):
        unit = unit.lower()
        scale = (
            1
            if unit.startswith(("ms", "milli", "毫"))
            else 60_000
            if unit.startswith(("min", "分"))
            else 1000
        )
        found.append(Decimal(number) * scale)
    return found


def has_property(topic: str, *, level: str, message: str, vocabulary: Vocabulary) -> bool:
    """Whether a line has what calling it a `topic` line says: an error line is at ERROR or above, a
    timeout line states a failure of waiting (not `negotiated timeout 10000`), a slow line says slow or
    states a duration above the slow threshold (a line in a known format, its own duration:
    PostgreSQL's `duration:`, an access log's request time), a slow query is such a line of a
    database; any other topic, one of its terms."""
    if topic == "error":
        return is_error_level(level)
    if topic == "timeout":
        return bool(TIMEOUT_FAILURE.search(message))
    if topic in ("slow", "slow_query"):
        fields = fields_of(message)
        stated = durations_ms(message) if fields.format == PLAIN else [fields.duration_ms]
        slow = any(has_word(message, word) for word in SLOW_WORDS) or any(
            duration is not None and duration > vocabulary.slow_threshold_ms for duration in stated
        )
        of_database = fields.format == POSTGRES or "slow_query" in groups_of(message, vocabulary=vocabulary)
        return slow and (topic == "slow" or of_database)
    return topic in groups_of(message, vocabulary=vocabulary)


@dataclass(frozen=True)
class Pattern:
    """One template and the indexes (into the lines given) of the lines it covers, in their order."""

    template: str
    members: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.members)


def _miner() -> TemplateMiner:
    config = TemplateMinerConfig()
    config.profiling_enabled = False
    # Numbers and ids vary between lines of one kind: masked before mining, shown as `<*>`.
    config.masking_instructions = [
        MaskingInstruction(r"0x[0-9a-fA-F]+", "*"),
        MaskingInstruction(r"\b[0-9a-fA-F]{8,}(?:-[0-9a-fA-F]{4,})*\b", "*"),
        MaskingInstruction(r"\d+(?:[.,:/-]\d+)*", "*"),
    ]
    config.mask_prefix, config.mask_suffix = "<", ">"
    return TemplateMiner(config=config)


def patterns_mined(messages: list[str]) -> list[Pattern]:
    """The messages grouped by template (Drain3), most lines first, then by first appearance."""
    miner = _miner()
    clusters = [miner.add_log_message(message)["cluster_id"] for message in messages]
    members: dict[int, list[int]] = {}
    for index, cluster in enumerate(clusters):
        members.setdefault(cluster, []).append(index)
    templates = {cluster.cluster_id: cluster.get_template() for cluster in miner.drain.clusters}
    found = [Pattern(template=templates[c], members=tuple(indexes)) for c, indexes in members.items()]
    return sorted(found, key=lambda pattern: (-pattern.count, pattern.members[0]))
