"""The report's wording of resolved alerts (contracts §18): when they fired, resolved, how long."""

import pytest

from aiops.report import duration_words, past_tense, resolved_text

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


def test_a_finding_is_told_in_the_past_outside_its_quote():
    finding = "web-1:9100 当前存在 NodeLoadHigh 告警（firing），当前值 7.2：「NodeLoadHigh firing 当前 7.2」"

    assert past_tense(finding) == (
        "web-1:9100 触发期间存在 NodeLoadHigh 告警（当时触发中），当时的值 7.2：「NodeLoadHigh firing 当前 7.2」"
    )
