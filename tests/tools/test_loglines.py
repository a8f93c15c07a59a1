"""Log lines with their meaning, on the loghub-style lines the tests' Loki serves and on
the formats services write their level in; the demo world's vocabulary and the second world's."""

import json
import re
from pathlib import Path

import pytest

from tools.loglines import (
    groups_of,
    has_property,
    has_word,
    level_of,
    logql_words,
    patterns_mined,
    words_of,
)
from tools.vocabulary import vocabulary_load

ROOT = Path(__file__).parents[2]
LOGHUB = json.loads((ROOT / "tests" / "world" / "loghub_streams.json").read_text())
VOCABULARIES = {
    "demo": ROOT / "tools" / "data" / "demo_world" / "vocabulary.json",
    "second": ROOT / "tests" / "world" / "vocabulary.json",
}


def lines_of(service: str) -> list[str]:
    return [
        line["line"]
        for stream in LOGHUB
        if stream["stream"]["service"] == service
        for line in stream["lines"]
    ]


@pytest.fixture(params=sorted(VOCABULARIES))
def vocabulary(request):
    return vocabulary_load(VOCABULARIES[request.param])


def properties(line: str, vocabulary) -> set[str]:
    level = level_of(line)
    return {
        t
        for t in ("error", "timeout", "slow")
        if has_property(t, level=level, message=line, vocabulary=vocabulary)
    }


@pytest.mark.parametrize(
    ("line", "labels", "level"),
    [
        ("payment capture failed", {"level": "error"}, "ERROR"),
        ("anything", {"detected_level": "warning"}, "WARN"),
        ("anything", {"severity": "info"}, "INFO"),
        ('{"level":"error","msg":"boom"}', {}, "ERROR"),
        ('{"severity":"WARNING","message":"disk almost full"}', {}, "WARN"),
        ('ts=2024-01-01T00:00:00Z level=error msg="upstream failed"', {}, "ERROR"),
        ("E1201 12:00:00.123456       1 controller.go:114] error syncing pod", {}, "ERROR"),
        ("W1201 12:00:00.123456       1 reflector.go:324] watch closed", {}, "WARN"),
        ("[ERROR] cannot open file", {}, "ERROR"),
        ("2024-01-01 12:00:00,123 - app.db - ERROR - connection refused", {}, "ERROR"),
        ("ERROR:root:job failed", {}, "ERROR"),
        ("2024-01-01 12:00:00.123 [main] WARN  com.example.App - retrying", {}, "WARN"),
        ("the word error in lower case is message text", {}, ""),
        ("no level at all", {}, ""),
    ],
)
def test_the_level_comes_from_the_labels_else_from_the_line(line, labels, level):
    assert level_of(line, labels) == level


def test_loghub_lines_are_read_at_their_own_level():
    assert {level_of(line) for line in lines_of("cart-api")} == {"INFO"}
    assert [level_of(line) for line in lines_of("zookeeper")].count("ERROR") == 4


def test_words_are_whole_words_and_the_parts_of_camel_and_snake_case():
    assert words_of("SocketTimeoutException at read_timeout_ms") == [
        "socket",
        "timeout",
        "exception",
        "at",
        "read",
        "timeout",
        "ms",
    ]
    assert has_word("java.net.SocketTimeoutException", "timeout")
    assert has_word("connection_timeout reached", "timeout")
    assert has_word("request timed out after 30000ms", "timed out")
    assert not has_word("node cp-1.slowvm1.tcloud-pg0", "slow")
    assert not has_word("took 5500ms", "500")
    assert has_word("响应超时 3000ms", "超时")


def test_the_logql_regex_is_whole_word_with_camel_case_parts():
    pattern = re.compile(logql_words(["slow", "timeout"]))
    assert pattern.search("a slow request")
    assert pattern.search("SocketTimeoutException")
    assert pattern.search("TIMEOUT")
    assert not pattern.search("cp-1.slowvm1.tcloud-pg0.utah.cloudlab.us")
    assert not pattern.search("sockettimeoutexception")


def test_no_loghub_info_line_is_an_error_and_slowvm1_is_no_slow_request(vocabulary):
    for line in lines_of("cart-api"):
        assert properties(line, vocabulary) == set(), line


def test_a_negotiated_timeout_is_no_timeout_and_a_notification_time_out_is(vocabulary):
    negotiated = [line for line in lines_of("zookeeper") if "negotiated timeout 10000" in line]
    timed_out = [line for line in lines_of("zookeeper") if "Notification time out: 60000" in line]
    assert len(negotiated) == 5 and len(timed_out) == 7
    assert all("timeout" not in properties(line, vocabulary) for line in negotiated)
    assert all("timeout" in properties(line, vocabulary) for line in timed_out)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("upstream search timed out after 2000ms", {"timeout", "slow"}),
        ("context deadline exceeded", {"timeout"}),
        ("timeout of 3000ms exceeded", {"timeout", "slow"}),
        ("slow query 3200ms: SELECT 1", {"slow"}),
        ("慢请求: GET /api 响应耗时 4200ms", {"slow"}),
        ("Full GC 平均耗时 850ms", set()),
        ("request served in 0.2s", set()),
    ],
)
def test_timeouts_are_failure_phrases_and_slow_is_the_word_or_a_long_duration(message, expected, vocabulary):
    assert properties(message, vocabulary) == expected


def test_the_slow_threshold_is_the_vocabularys(vocabulary):
    strict = vocabulary.model_copy(update={"slow_threshold_ms": 500})
    assert has_property("slow", level="INFO", message="Full GC 平均耗时 850ms", vocabulary=strict)


def test_other_topics_need_one_of_their_terms_as_whole_words(vocabulary):
    assert "oom" in groups_of("container exited with OOMKilled, restarting", vocabulary=vocabulary)
    assert has_property("oom", level="ERROR", message="java.lang.OutOfMemoryError", vocabulary=vocabulary)
    assert not has_property("oom", level="ERROR", message="room booked", vocabulary=vocabulary)


def test_patterns_group_lines_by_template_with_counts_most_first():
    zookeeper = lines_of("zookeeper")

    patterns = patterns_mined(zookeeper)

    assert [p.count for p in patterns] == [7, 5, 4, 3]
    assert sum(p.count for p in patterns) == len(zookeeper)
    assert patterns[0].template.endswith("Notification time out: <*>")
    assert all("negotiated timeout" in zookeeper[i] for i in patterns[1].members)
    assert patterns[1].members == tuple(range(5))


def test_a_camel_case_term_matches_the_same_humps_in_a_line():
    assert has_word("HikariCP pool stats: active=50/50", "HikariCP")
    assert has_word("Back-off restarting failed container (CrashLoopBackOff)", "CrashLoopBackOff")
    assert re.search(logql_words(["CrashLoopBackOff"]), "Back-off restarting (CrashLoopBackOff)")
    assert not has_word("oomkilledx", "OOMKilled")


@pytest.mark.parametrize(
    ("line", "term", "uses"),
    [
        ("container exited with OOMKilled, restarting", "restart", True),
        ("3 errors in the last minute", "error", True),
        ("ReadTimeouts keep growing", "timeout", True),
        ("restartable=false", "restart", False),
        ("host slowvm1 answered", "slow", False),
    ],
)
def test_a_words_inflections_are_the_word_and_nothing_longer_is(line, term, uses):
    assert has_word(line, term) is uses
    assert bool(re.search(logql_words([term]), line)) is uses
