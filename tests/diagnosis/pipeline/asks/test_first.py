"""`first` and `list` over a window: every alert that fired in the asked window (each alert's first
raw `ALERTS{alertstate="firing"}` sample in it, with Prometheus; the alerts firing now without),
counted, earliest first, with when each began; an alert that fires by design is named as such and never first.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from datetime import datetime

from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    FakeToolbox,
    T,
    alert_record,
    alerts_message,
    message,
    only,
    per_world,
    read,
    run,
)

FIRING = 'min_over_time(timestamp(ALERTS{alertstate="firing"})[30m:1s])'
MINUTE = 60.0


def clock(seconds_ago: float) -> str:
    return datetime.fromtimestamp(T - seconds_ago).strftime("%H:%M:%S")


def local(seconds_ago: float) -> str:
    return datetime.fromtimestamp(T - seconds_ago).strftime("%Y-%m-%d %H:%M:%S")


def first_sample(labels: dict, *, since: float) -> dict:
    """An alert whose first firing sample in the window was `since` seconds before now (a series of
    `min_over_time(timestamp(ALERTS…)[…])`: no metric name, the time as its value)."""
    return {"metric": {"alertstate": "firing", **labels}, "value": [T, str(T - since)]}


def window_world(names) -> tuple:
    """The range answer and the alert query of a world where, over the last 30 minutes: its second
    alert was firing before the window began (since 45 minutes ago) and still is, a third fired 25
    minutes ago and resolved since (the alert query no longer shows it), its first alert began 20
    minutes ago, and a watchdog (severity none) fires all along."""
    series = [
        first_sample({"alertname": names.alert, "service": names.service, "severity": "critical"}, since=20 * MINUTE),
        first_sample({"alertname": names.other_alert, "service": names.other, "severity": "warning"}, since=30 * MINUTE),
        first_sample({"alertname": f"{names.alert}Burst", "service": names.service, "severity": "warning"}, since=25 * MINUTE),
        first_sample({"alertname": "Watchdog", "severity": "none"}, since=30 * MINUTE),
    ]
    texts = [f"{s['metric']['alertname']} {s['value'][1]}" for s in series]
    ranged = message(9, "query_promql", "series", series, texts, arguments={"query": FIRING, "minutes": 0})
    alerts = alerts_message(
        1,
        [
            alert_record(names, active_at=local(20 * MINUTE)),
            alert_record(names, other=True, active_at=local(45 * MINUTE)),
            alert_record(names, alert_name="Watchdog", service="", severity="none", active_at=local(300 * MINUTE)),
        ],
    )
    return ranged, alerts


@per_world
def test_every_alert_that_fired_in_the_window_is_listed_earliest_first_and_counted(names):
    ranged, alerts = window_world(names)

    slot = only(read("过去 30 分钟哪些告警？", names, [alerts, ranged]))

    assert slot.filled
    assert slot.conclusion == (
        "过去 30 分钟 触发过 4 条告警（3 条仍在触发，含 1 条始终触发的看门狗告警），按开始时间："
        f"1. {names.other} 的 {names.other_alert}（warning，过去 30 分钟开始前已在触发，{clock(45 * MINUTE)} 起）；"
        f"2. {names.service} 的 {names.alert}Burst（warning，{clock(25 * MINUTE)} 起，已恢复）；"
        f"3. {names.service} 的 {names.alert}（critical，{clock(20 * MINUTE)} 起）；"
        "4. Watchdog（始终触发的看门狗告警，不计入先后）"
    )
    assert slot.limits == []
    assert [b.source_invocation_id for b in slot.bindings] == [9, 9, 9, 9]


@per_world
def test_which_fired_first_is_the_earliest_to_begin_never_the_watchdog(names):
    ranged, alerts = window_world(names)

    slot = only(read("过去 30 分钟最先触发的是哪条告警？", names, [alerts, ranged]))

    assert slot.conclusion == (
        f"过去 30 分钟最先触发的是 {names.other} 的 {names.other_alert}"
        f"（warning，过去 30 分钟开始前已在触发，{clock(45 * MINUTE)} 起）；Watchdog 是始终触发的看门狗告警，不计入先后"
    )


@per_world
def test_which_fired_first_in_english_is_the_same_ask(names):
    ranged, alerts = window_world(names)

    slot = only(read("Which alert fired first in the last 30 minutes?", names, [alerts, ranged]))

    assert slot.ask.kind == "first"
    assert f"最先触发的是 {names.other} 的 {names.other_alert}" in slot.conclusion


@per_world
def test_without_prometheus_the_alerts_firing_now_are_listed_and_the_limit_said(names):
    alerts = alerts_message(
        1,
        [
            alert_record(names, active_at=local(20 * MINUTE)),
            alert_record(names, other=True, active_at=local(45 * MINUTE)),
        ],
    )

    slot = only(read("过去 30 分钟哪些告警？", names, [alerts], tools=NO_PROMETHEUS))

    assert slot.filled
    assert slot.conclusion.startswith("过去 30 分钟 触发过 2 条告警（2 条仍在触发），按开始时间：")
    assert f"1. {names.other} 的 {names.other_alert}（warning，过去 30 分钟开始前已在触发，{clock(45 * MINUTE)} 起）" in (
        slot.conclusion
    )
    assert slot.limits == ["没有告警历史（需要 Prometheus）：只列出当前仍在触发的告警，窗口内触发后已恢复的看不到"]


@per_world
def test_with_no_window_which_fired_first_is_read_from_the_alerts_firing_now(names):
    alerts = alerts_message(
        1,
        [
            alert_record(names, active_at=local(20 * MINUTE)),
            alert_record(names, other=True, active_at=local(45 * MINUTE)),
        ],
    )

    slot = only(read("最先触发哪条告警？", names, [alerts]))

    assert slot.conclusion == (
        f"当前触发的告警中最先触发的是 {names.other} 的 {names.other_alert}（warning，{clock(45 * MINUTE)} 起）"
    )


@per_world
def test_a_window_asks_prometheus_for_every_firing_alert_over_it_and_no_window_asks_nothing_more(names):
    toolbox = FakeToolbox(names)

    run("过去 30 分钟哪些告警？最先触发哪条？", names, toolbox)
    windowed = toolbox.calls
    toolbox = FakeToolbox(names)
    run("最先触发哪条告警？", names, toolbox)

    assert windowed == [("query_alerts", {}), ("query_promql", {"query": FIRING, "minutes": 0})]
    assert toolbox.calls == [("query_alerts", {})]


@per_world
def test_alerts_that_began_at_one_instant_are_first_together(names):
    series = [
        first_sample({"alertname": names.alert, "service": names.service, "severity": "critical"}, since=20 * MINUTE),
        first_sample({"alertname": names.other_alert, "service": names.other, "severity": "warning"}, since=20 * MINUTE),
        first_sample({"alertname": f"{names.alert}Burst", "service": names.service, "severity": "warning"}, since=10 * MINUTE),
    ]
    texts = [f"{s['metric']['alertname']} {s['value'][1]}" for s in series]
    ranged = message(9, "query_promql", "series", series, texts, arguments={"query": FIRING, "minutes": 0})
    alerts = alerts_message(1, [alert_record(names), alert_record(names, other=True)])

    slot = only(read("Which alert fired first in the last 30 minutes?", names, [alerts, ranged]))

    assert slot.conclusion.startswith("最近 30 分钟同时最先触发的是 ")
    assert names.alert in slot.conclusion and names.other_alert in slot.conclusion
    assert f"{names.alert}Burst" not in slot.conclusion
    assert len(slot.bindings) == 2
