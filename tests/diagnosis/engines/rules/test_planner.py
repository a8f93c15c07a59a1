import json

import pytest

from diagnosis.engines.rules import planner
from diagnosis.pipeline.question import question_read
from diagnosis.selectors.world import world_current
from tests.diagnosis.pipeline.asks.test_measured import asks, stack


def plan_by_rules(question: str):
    """The rules plan of a question read against the world now, as a round hands it the question."""
    read = question_read(query=question, world=world_current())
    return planner.plan_by_rules(
        question, focus=read.focus, narrow=read.narrow_scope, excluded=read.excluded_topics
    )


@pytest.mark.parametrize(
    ("question", "focus", "narrow"),
    [
        ("只确认 order-service 是否存在 HighMemoryUsage 告警", ["order-service", "HighMemoryUsage"], True),
        ("payment-service 的 CPU 为什么这么高？", ["payment-service"], False),
        (
            "Only confirm whether SlowResponse is firing for user-service",
            ["user-service", "SlowResponse"],
            True,
        ),
        ("现在系统有哪些告警", [], False),
    ],
)
def test_planner_finds_services_alerts_and_scope(question, focus, narrow):
    plan = plan_by_rules(question)

    assert plan.focus == focus
    assert plan.narrow_scope is narrow
    assert plan.steps[0].tool == "query_alerts"


def test_excluded_topics_are_not_planned_as_focus():
    plan = plan_by_rules("只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service")

    assert plan.focus == ["HighCPUUsage"]
    assert {"订单123", "OOM", "数据库慢查询", "连接池", "user-service"} <= set(plan.excluded_topics)


def test_why_questions_look_up_runbooks_but_narrow_questions_do_not():
    assert "lookup_knowledge" in {s.tool for s in plan_by_rules("order-service 为什么频繁 Full GC？").steps}
    assert "lookup_knowledge" not in {s.tool for s in plan_by_rules("只确认 order-service 是否有告警").steps}


def test_services_named_by_their_chinese_alias_are_in_focus():
    assert plan_by_rules("订单服务是不是连接池耗尽了").focus == ["order-service"]


def test_english_connection_questions_are_about_the_connection_pool():
    from tools.matching import query_groups

    assert query_groups("Is order-service running out of database connections?") == {"connection_pool"}


def test_a_question_about_alerts_alone_does_not_search_logs():
    assert [s.tool for s in plan_by_rules("现在系统有哪些告警").steps] == ["query_alerts"]
    assert "query_logs" in {s.tool for s in plan_by_rules("order-service 有什么异常").steps}


def test_both_chinese_words_for_alerts_plan_the_same_steps_in_either_world(either_world):
    plans = [plan_by_rules(question) for question in ("现在有哪些报警", "现在有哪些告警")]

    assert plans[0].steps == plans[1].steps
    assert [s.tool for s in plans[0].steps] == ["query_alerts"]


def test_the_ask_words_of_the_world_file_are_what_the_focus_and_the_plan_read(settings, tmp_path):
    question = "现在有哪些通知"
    before = plan_by_rules(question)
    path = tmp_path / "vocabulary.json"
    path.write_text(json.dumps({"extends": True, "asks": {"alerts": ["通知"]}}), encoding="utf-8")
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(path)}

    assert not before.steps
    assert world_current().focus_of(query=question).lists_alerts
    assert [s.tool for s in plan_by_rules(question).steps] == ["query_alerts"]


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        ("order-service 的 404 多不多，都是哪些路径？", False),
        ("Which kinds of errors does payment-service log, and how many of each?", False),
        ("order-service 有哪些超过 1 秒的慢请求？", True),
        ("order-service 最近的错误日志", True),
    ],
)
def test_a_count_of_log_lines_is_answered_by_the_count_without_a_search_of_recent_lines(question, searched):
    read = question_read(query=question, world=world_current())
    plan = planner.plan_by_rules(
        question, focus=read.focus, narrow=read.narrow_scope, excluded=read.excluded_topics, asks=read.asks
    )

    assert ("query_logs" in [step.tool for step in plan.steps]) is searched


@pytest.mark.parametrize(
    ("question", "world", "tools"),
    [
        ("哪个拨测挂了，从什么时候开始的？", "exporters", set()),
        ("Which blackbox probe is failing and since when?", "exporters", {"query_alerts", "query_logs"}),
        ("payment-service 的 CPU 现在多少", "demo", {"query_alerts", "query_logs"}),
        ("billing 的哪个 node 挂了", "second", {"query_alerts", "query_logs"}),
    ],
)
def test_a_quantity_asked_of_no_subject_or_topic_is_its_querys_alone(question, world, tools):
    read_world, _ = stack(world)
    plan = planner.plan_by_rules(
        question,
        focus=read_world.focus_of(query=question),
        narrow=False,
        excluded=(),
        asks=asks(question, world),
    )

    assert {step.tool for step in plan.steps} == tools
