"""What a question asks (a list of alerts, a cause, guidance) is read from the words of the world
vocabulary it is handed; a vocabulary without ask words reads the shipped ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from diagnosis.pipeline.focus import Inventory, question_focus
from tests.diagnosis.pipeline.asks.support import WORLD_IDS, WORLDS, world
from tools.metric_catalog import MetricCatalog
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, Asks, Vocabulary, vocabulary_load

DEMO = vocabulary_load(DEFAULT_VOCABULARY_FILE)


def focus(query, vocabulary=DEMO):
    inventory = Inventory.build(services=["checkout"], alerts=[], vocabulary=vocabulary)
    return question_focus(query=query, inventory=inventory, vocabulary=vocabulary)


def asked(found):
    return (found.lists_alerts, found.asks_cause, found.asks_guidance)


def test_either_chinese_word_for_alerts_lists_alerts():
    assert focus("现在有哪些报警").lists_alerts and focus("现在有哪些告警").lists_alerts


def test_the_words_of_each_ask_come_from_the_vocabulary():
    own = Vocabulary(asks=Asks(alerts=["通知"], cause=["怎么回事"], guidance=["手册"]))

    assert asked(focus("checkout 怎么回事，有哪些通知", own)) == (True, True, False)
    assert asked(focus("checkout 怎么回事，有哪些通知")) == (False, False, True)


def test_a_vocabulary_without_ask_words_reads_the_shipped_ones():
    bare = Vocabulary()

    assert bare.asks == DEMO.asks
    assert asked(focus("checkout 为什么慢，有哪些报警，如何处理", bare)) == (True, True, True)


def test_an_ask_written_empty_has_no_words():
    assert not focus("checkout 如何处理", Vocabulary(asks=Asks(guidance=[]))).asks_guidance


def test_english_ask_words_are_whole_words():
    found = focus("show me the firing alerts")

    assert found.lists_alerts and not found.asks_guidance  # "show" is not "how"


def test_a_name_right_before_an_alert_word_is_an_unknown_alert():
    own = Vocabulary(asks=Asks(alerts=["通知"]))

    assert focus("billing-relay 报警").unknown_alerts == ["billing-relay"]
    assert focus("billing-relay 通知", own).unknown_alerts == ["billing-relay"]
    assert focus("billing-relay 通知").unknown_services == ["billing-relay"]


def test_a_metric_the_source_holds_is_a_series_not_an_unknown_service():
    for service, metric in (("checkout", "node_load1"), ("order-service", "tomcat_sessions_active_current")):
        inventory = Inventory.build(services=[service], alerts=[], metrics=[metric], vocabulary=DEMO)
        unheld = Inventory.build(services=[service], alerts=[], vocabulary=DEMO)

        found = question_focus(query=f"{service} 的 {metric} 当前值", inventory=inventory, vocabulary=DEMO)

        assert found.services == (service,) and found.unknown == ()
        assert question_focus(
            query=f"{metric} 当前值", inventory=unheld, vocabulary=DEMO
        ).unknown_services == [metric]


per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)


@per_world
def test_a_quoted_service_label_equal_to_a_known_name_in_another_spelling_is_that_service(names):
    spelled = names.service.upper().replace("-", "_")

    found = world(names).focus_of(query=f'只确认 service="{spelled}" 是否存在 {names.alert} 告警')

    assert found.services == (names.service,)
    assert found.unknown == ()


@per_world
@pytest.mark.parametrize("shape", ['{name}\\"}} or vector(1)', "{name} canary", "x {name}", ".*"])
def test_a_quoted_service_label_that_only_contains_a_known_name_is_an_unknown_service(names, shape):
    value = shape.format(name=names.service)

    found = world(names).focus_of(query=f'只确认 service="{value}" 是否存在 {names.alert} 告警')

    assert found.services == ()
    assert found.unknown_services == [value.replace('\\"', '"')]
    assert found.alerts == (names.alert,)


@per_world
def test_a_quoted_identity_label_names_no_subject_even_when_it_contains_a_service(names):
    found = world(names).focus_of(
        query=f'只确认 service="elsewhere" 是否存在 {names.alert} 告警（pod="{names.other} 7d9f"）'
    )

    assert found.services == ()
    assert found.unknown_services == ["elsewhere"]


@per_world
@pytest.mark.parametrize(
    "query",
    [
        "shipping 为什么响应慢？",
        "shipping 的错误日志有哪些",
        "shipping 服务有告警吗",
        "Why is the shipping service slow?",
        "errors of service shipping",
    ],
)
def test_a_plain_word_where_a_name_stands_is_an_unknown_service(names, query):
    found = world(names).focus_of(query=query)

    assert found.services == ()
    assert found.unknown_services == ["shipping"]


@per_world
def test_a_plain_word_before_an_alert_word_in_english_is_an_unknown_alert(names):
    found = world(names).focus_of(query="Why is the rollback alert firing?")

    assert found.unknown_alerts == ["rollback"]


@per_world
@pytest.mark.parametrize(
    "query",
    [
        "{service} 有多少个 pod？",
        "JVM 内存是多少",
        "Prometheus 的抓取目标有挂的吗",
        "CPU 使用率是多少",
        "which alerts are firing?",
        "runbook 第一步是什么",
    ],
)
def test_a_word_of_the_vocabulary_or_a_source_is_no_name(names, query):
    found = world(names).focus_of(query=query.format(service=names.service))

    assert found.unknown == ()


@per_world
@pytest.mark.parametrize(
    "query", ["PostgreSQL 日志里有哪几类错误，各多少条？", "What kinds of errors are in the PostgreSQL log?"]
)
def test_a_software_full_name_names_the_service_known_by_its_short_name(names, query):
    inventory = Inventory.build(services=[*names.services, "postgres"], alerts=names.alerts, vocabulary=DEMO)

    found = question_focus(query=query, inventory=inventory, vocabulary=DEMO)

    assert found.services == ("postgres",) and found.unknown == ()


@per_world
def test_a_software_name_no_service_of_the_world_runs_stays_unknown_never_swapped(names):
    found = world(names).focus_of(query="PostgreSQL 日志里有哪几类错误？")

    assert found.services == () and [u.name for u in found.unknown] == ["PostgreSQL"]


@per_world
def test_a_word_that_names_no_subject_never_becomes_one(names):
    found = world(names).focus_of(query=f"What kinds of errors does {names.service} log, and how many of each?")

    assert found.services == (names.service,) and found.unknown == ()


@per_world
def test_a_label_value_the_metric_catalog_holds_is_no_unknown_service(names):
    held = replace(world(names), metric_catalog=MetricCatalog(values={"datname": ("ledger",)}))
    query = "ledger 数据库有哪些超过 1 秒的慢查询？"

    assert held.focus_of(query=query).unknown == ()
    assert world(names).focus_of(query=query).unknown_services == ["ledger"]
