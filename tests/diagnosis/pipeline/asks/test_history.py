"""`history`: episodes in the window counted from `ALERTS_FOR_STATE`, flapping from three, and
the limit of what Prometheus keeps.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from diagnosis.pipeline.asks.slots import (
    slot_gap,
)
from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    FakeToolbox,
    Names,
    T,
    alert_record,
    alerts_message,
    only,
    per_world,
    read,
    run,
    series_message,
)


def episodes(alert: str, service: str, count: int) -> dict:
    """`changes(ALERTS_FOR_STATE[w])` of one alert: each new episode is a new activeAt, so count - 1."""
    return {"metric": {"alertname": alert, "service": service}, "value": [T, str(count - 1)]}


def history_message(names: Names, records: list[dict]) -> dict:
    query = f'changes(ALERTS_FOR_STATE{{service="{names.other}"}}[60m])'
    return series_message(4, query, records, minutes=0)


def history_question(names: Names) -> str:
    return f"{names.other} 的{names.other_metric}告警是不是在反复触发？"


@per_world
def test_history_counts_episodes_as_activeat_changes_plus_one_and_marks_three_as_flapping(names):
    record = episodes(names.other_alert, names.other, 3)

    slot = only(read(history_question(names), names, [history_message(names, [record])]))

    assert slot.filled
    assert f"{names.other_alert} 触发 3 次，反复触发" in slot.conclusion


@per_world
def test_two_episodes_are_counted_but_not_called_flapping(names):
    record = episodes(names.other_alert, names.other, 2)

    slot = only(read(history_question(names), names, [history_message(names, [record])]))

    assert f"{names.other_alert} 触发 2 次" in slot.conclusion
    assert "反复触发" not in slot.conclusion


@per_world
def test_a_week_of_history_beyond_the_retention_says_the_window_prometheus_keeps(names):
    record = episodes(names.other_alert, names.other, 1)
    kept = history_message(names, [record])
    kept.details["retention_minutes"] = 24 * 60

    slot = only(read(f"上周 {names.other} 出过什么问题？", names, [kept]))

    assert slot.filled
    assert "过去 7 天（上周）" in slot.conclusion
    assert slot.line().endswith("Prometheus 只保留最近 1 天 的指标，更早的看不到）")


@per_world
def test_history_within_the_retention_states_no_limit(names):
    kept = history_message(names, [episodes(names.other_alert, names.other, 1)])
    kept.details["retention_minutes"] = 15 * 24 * 60

    slot = only(read(f"上周 {names.other} 出过什么问题？", names, [kept]))

    assert slot.filled and slot.limits == []


@per_world
def test_without_prometheus_history_is_unfilled_with_that_reason(names):
    alerts = alerts_message(1, [alert_record(names, other=True)], arguments={"service": names.other})

    slot = only(read(history_question(names), names, [alerts], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot_gap(slot) == (
        f"未能回答：{names.other} 的触发历史 — 告警历史需要 Prometheus 数据源（未配置），只能看到当前告警"
    )


@per_world
def test_history_of_a_service_queries_alerts_for_state_on_every_service_label(names):
    toolbox = FakeToolbox(names)

    run(f"{names.other} 的{names.other_metric}告警是不是在反复触发？", names, toolbox)

    history = [args for tool, args in toolbox.calls if tool == "query_promql"]
    # An instant query: the changes of each alert's activeAt over the window count its episodes.
    assert history == [
        {
            "query": " or ".join(
                f'changes(ALERTS_FOR_STATE{{{label}="{names.other}"}}[60m])'
                for label in ("service", "app", "job")
            ),
            "minutes": 0,
        }
    ]


@per_world
def test_a_week_of_history_is_asked_over_seven_days(names):
    toolbox = FakeToolbox(names)

    run(f"上周 {names.service} 出过什么问题？", names, toolbox)

    [history] = [args["query"] for tool, args in toolbox.calls if tool == "query_promql"]
    assert f"[{7 * 24 * 60}m]" in history
