"""Reading what a question is about against the inventory: tolerant names, unknown ones with their
nearest known names, nothing understood — on the demo world's vocabulary and a second world's."""

from __future__ import annotations

import pytest

from diagnosis.evaluation.fixtures import WORLDS_DIR
from diagnosis.pipeline.focus import NOTHING_UNDERSTOOD, Inventory, question_focus
from tools.vocabulary import DEFAULT_VOCABULARY_FILE, vocabulary_load

DEMO = vocabulary_load(DEFAULT_VOCABULARY_FILE)
SHOP = vocabulary_load(WORLDS_DIR / "shop" / "vocabulary.json")
DEMO_INVENTORY = Inventory.build(
    services=["payment-service", "order-service"], alerts=["HighCPUUsage"], vocabulary=DEMO
)
SHOP_INVENTORY = Inventory.build(
    services=["checkout", "postgres", "payments"], alerts=["KubePodCrashLooping"], vocabulary=SHOP
)


def focus(query, inventory=DEMO_INVENTORY, vocabulary=DEMO):
    return question_focus(query=query, inventory=inventory, vocabulary=vocabulary)


@pytest.mark.parametrize(
    "query",
    [
        "只确认 Payment_Service 是否存在 HighCPUUsage",
        "payment service high cpu usage",
        "支付服务 HighCPUUsage",
    ],
)
def test_names_match_whatever_the_case_separators_or_chinese_alias(query):
    found = focus(query)

    assert (found.services, found.alerts, found.unknown) == (("payment-service",), ("HighCPUUsage",), ())


def test_an_unknown_alert_is_reported_with_its_nearest_known_names():
    found = focus("只确认是否存在 HighCPUUsgae 告警")

    assert found.notes()[0].startswith("未找到名为 HighCPUUsgae 的告警（最接近的已知名称：HighCPUUsage")


def test_an_unknown_service_is_reported_as_a_service():
    found = focus("只确认 paymnet-service 是否存在告警")

    assert found.unknown_services == ["paymnet-service"]
    assert "payment-service" in found.notes()[0]


def test_a_topic_term_shaped_like_a_name_is_a_topic_not_an_unknown_subject():
    found = focus("order-service 的 HikariCP 连接池")

    assert (found.unknown, "connection_pool" in found.topics) == ((), True)


def test_nothing_understood_gives_example_questions_from_the_inventory():
    found = focus("asdf qwer")

    assert not found.understood
    assert found.notes()[0].startswith(NOTHING_UNDERSTOOD)
    assert "HighCPUUsage" in found.notes()[0]


def test_a_second_world_without_service_suffixes_is_read_from_its_own_names():
    found = focus("只确认 check-out 是否存在 KubePodCrashLooping 告警", SHOP_INVENTORY, SHOP)

    assert (found.services, found.alerts, found.unknown) == (("checkout",), ("KubePodCrashLooping",), ())


def test_a_cause_question_in_the_second_world_has_its_topics():
    found = focus("checkout 为什么反复重启？", SHOP_INVENTORY, SHOP)

    assert found.asks_cause and "crashloop" in found.topics
    assert SHOP_INVENTORY.widened(found.topics) >= {"crashloop", "oom", "readiness"}


@pytest.mark.parametrize(
    ("vocabulary", "service", "metric"),
    [(DEMO, "order-service", "tomcat_sessions_active_current"), (SHOP, "checkout", "node_load1")],
    ids=["demo", "shop"],
)
def test_the_recorded_inventory_keeps_the_metrics_the_question_names_so_reading_it_again_agrees(
    vocabulary, service, metric
):
    held = Inventory.build(
        services=[service], alerts=[], metrics=[metric, "other_metric_total"], vocabulary=vocabulary
    )
    query = f"{service} 的 {metric} 当前值"

    recorded = held.as_dict(query=query)
    again = Inventory.build(
        services=recorded["services"],
        alerts=recorded["alerts"],
        metrics=recorded["metrics"],
        vocabulary=vocabulary,
    )

    assert recorded["metrics"] == [metric]
    assert focus(query, again, vocabulary).unknown == ()
