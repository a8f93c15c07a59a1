"""What a question asks that no ask answers: a question word (多少、哪、为什么、which …) whose kind of
question none of its asks answers is said as not understood. Every behaviour holds on two worlds:
plain names (checkout, cart-api, billing-db) and the demo world's (order-service, payment-service)."""

from __future__ import annotations

import pytest

from diagnosis.pipeline.asks.reader import without_window
from diagnosis.pipeline.asks.unread import unread_in
from diagnosis.pipeline.windows import window_in
from tests.diagnosis.pipeline.asks.support import NOW, VOCABULARY, WORLD_IDS, WORLDS, Names, asks_of

per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)


def unread(query: str, names: Names) -> list[str]:
    window = window_in(query, now=NOW, default_minutes=60)
    return unread_in(without_window(query, window), asks=asks_of(query, names), vocabulary=VOCABULARY)


@per_world
@pytest.mark.parametrize(
    "query",
    [
        "{service} 的{metric}是多少",
        "{service} 为什么{metric}这么高",
        "现在有哪些告警",
        "最先处理哪个告警",
        "只确认是否存在 {alert} 告警",
        "{alert} 最近触发过几次",
        "{service} 有什么报错",
        "What is the {metric} of {service}?",
        "which alerts are firing?",
        "how many times has {alert} fired?",
        "过去 30 分钟 {service} 的{metric}是多少",
        "{service} 变慢了，根因是哪个服务？",
        "which service is the root cause of the {alert} alert?",
    ],
)
def test_a_question_word_an_ask_answers_is_read(names, query):
    said = query.format(service=names.service, metric=names.service_metric, alert=names.alert)

    assert unread(said, names) == []


@per_world
def test_which_no_ask_answers_is_not_understood(names):
    assert unread(f"{names.service} 部署在哪个机房？", names) == [
        f"未能理解所问：「{names.service} 部署在哪个机房」中的「哪」"
    ]


@per_world
def test_a_count_nothing_measures_is_not_understood(names):
    assert unread(f"{names.service} 有多少个 pod？", names) == [f"未能理解所问：「{names.service} 有多少个 pod」中的「多少」"]


@per_world
def test_an_english_question_word_nothing_answers_is_not_understood_and_quoted_as_written(names):
    assert unread(f"How many pods does {names.service} run?", names) == [
        f"未能理解所问：「How many pods does {names.service} run」中的「How many」"
    ]


@per_world
def test_each_clause_is_said_on_its_own(names):
    said = unread(f"{names.service} 的{names.service_metric}是多少，哪个 pod 最忙？", names)

    assert said == ["未能理解所问：「哪个 pod 最忙」中的「哪」"]


@per_world
def test_why_is_one_word_not_what_inside_it(names):
    assert unread(f"{names.service} 为什么慢", names) == []
