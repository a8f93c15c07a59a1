"""The on-call report: resolved alerts told in the past with when and how long; AI Ops
in priority order with each alert's value against its threshold, error-level log patterns, runbook steps."""

import re

import pytest
from django.test import override_settings

from aiops.report import duration_words, resolved_text, value_against_threshold, value_line
from aiops.services import aiops_run, aiops_start
from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from tests.aiops.support import DEMO_NOW

RESOLVED_NODE = {
    "alert_name": "NodeLoadHigh",
    "state": "resolved",
    "starts_at": "2026-11-29T06:35:00+00:00",
    "ends_at": "2026-11-29T07:40:30+00:00",
}


def test_a_resolved_alert_says_when_it_fired_resolved_and_for_how_long(settings):
    settings.TIME_ZONE = "Asia/Shanghai"

    assert resolved_text([RESOLVED_NODE]) == (
        "触发于 2026-11-29 14:35:00，恢复于 2026-11-29 15:40:30，持续 1 小时 5 分"
    )


def test_an_alert_with_one_episode_still_firing_is_not_resolved():
    assert resolved_text([RESOLVED_NODE, RESOLVED_NODE | {"state": "firing", "ends_at": None}]) == ""
    assert resolved_text([]) == ""


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(45, "45 秒"), (300, "5 分"), (330, "5 分 30 秒"), (3600, "1 小时"), (3900, "1 小时 5 分")],
)
def test_durations_in_words(seconds, words):
    assert duration_words(seconds) == words


@pytest.mark.parametrize(
    ("value", "expr", "line"),
    [
        ("1.6450887e+10", "x > 1e9", "当前值 1.6450887e+10，阈值 > 1e9（超出 1545%）"),
        ("1e308", "x > 1e-300", "当前值 1e308，阈值 > 1e-300（超出 1e+610%）"),
        ("-1e308", "x < 1e308", "当前值 -1e308，阈值 < 1e308（超出 200%）"),
        ("1e-300", "x > 1", "当前值 1e-300，阈值 > 1（未超出）"),
        ("1e308", "x > Inf", ""),
        ("5", "x < -Inf", ""),
        ("1e400", "x > 1", ""),
        ("NaN", "x > 1", ""),
        ("1e308", "x > 1e-999999", ""),
    ],
)
def test_a_value_of_any_magnitude_is_read_against_its_threshold(value, expr, line):
    record = {"alert_name": "A", "severity": "critical", "value": value, "expr": expr}

    assert value_line(record) == line
    assert isinstance(value_against_threshold(record), tuple) == bool(line)


@pytest.fixture
def shop_world(settings):
    data = world_tools("shop").source_data()
    overrides = {
        "VOCABULARY_FILE": str(WORLDS_DIR / "shop" / "vocabulary.json"),
        **fixture_sources(data, config=settings.DIAGNOSIS),
    }
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield


@pytest.fixture
def pinned(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": DEMO_NOW, "ENGINE": "rules"}


def sections(answer: str) -> list[str]:
    return re.findall(r"^## \d+\. (\S+)", answer, re.M)


@pytest.mark.django_db(transaction=True)
def test_ai_ops_lists_the_demo_alerts_most_urgent_first_with_value_threshold_logs_and_steps(pinned):
    session = aiops_run(session_pk=aiops_start().pk)

    # All critical: the one furthest past its threshold first (92% of > 80% before 91% of > 85%).
    assert sections(session.answer)[:2] == ["HighCPUUsage", "HighMemoryUsage"]
    assert "**数值**：级别 critical；当前值 92%，阈值 > 80%（超出 15%）" in session.answer
    assert "**数值**：级别 critical；当前值 91%，阈值 > 85%（超出 7%）" in session.answer
    assert (
        "- 1 条：「java.lang.OutOfMemoryError: Java heap space at OrderService.processLargeOrder:156」"
        in (session.answer)
    )
    assert (
        "> 1. 短期：对服务扩容（增加副本数）或临时调高 CPU limit，必要时对非核心接口限流。" in session.answer
    )
    # The runbook lookup ran: no next step asks for it again.
    assert "检索知识库中" not in session.answer
    scope_order = [alert["alert_name"] for alert in session.alert_scope["alerts"]]
    assert scope_order == sections(session.answer)


@pytest.mark.django_db(transaction=True)
def test_ai_ops_orders_another_world_by_severity_then_distance_past_the_threshold(pinned, shop_world):
    session = aiops_run(session_pk=aiops_start().pk)

    # critical first; of the two warnings, 2.8s against 1s is further past than 42s against 30s.
    assert sections(session.answer) == ["KubePodCrashLooping", "HighRequestLatency", "PostgresReplicationLag"]
    assert "当前值 2.8s，阈值 > 1s（超出 180%）" in session.answer
    assert "当前值 42s，阈值 > 30s（超出 40%）" in session.answer
    assert "「container checkout OOMKilled: memory limit 512Mi exceeded, exit code 137」" in session.answer
    assert [alert["alert_name"] for alert in session.alert_scope["alerts"]] == sections(session.answer)
