"""`cause` (why, root cause, from a stated time) is an investigation (§23): with a metrics source,
every service's key signals over the incident and a baseline; without one, what the subject's alerts
and lines say moved. Its one line is `根因候选：…；其次：…` (an inference: never a verified cause) or
`未找到根因证据：…`; `change` lists the same moves by time. Every behaviour holds on two worlds: plain
names (checkout, billing-db) and the demo world's (order-service, payment-service)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from diagnosis.pipeline.asks.cause import Cause
from diagnosis.pipeline.asks.slots import open_asks, slots_read, slots_verified
from diagnosis.pipeline.investigation.said import time_said
from tests.diagnosis.pipeline.asks.support import (
    NOW,
    Names,
    alert_record,
    alerts_message,
    asks_of,
    message,
    per_world,
    read,
    slot_world,
)
from tools.evidence.logs.record import LogLine
from tools.evidence.series.record import SeriesRecord

# Loki without Prometheus: the alerts, the lines and the lines counted a minute (LogQL metric queries).
LOKI_TOOLS = frozenset({"query_alerts", "query_logs", "count_logs", "query_logql"})


def cause_question(names: Names) -> str:
    return f"{names.service} 为什么报错"


def started(minutes_ago: int) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def service_alerts(names: Names, records: list[dict]) -> object:
    return alerts_message(1, records, arguments={"service": names.service})


def rising_lines(names: Names, values: list[str]) -> object:
    """Lines of one pattern whose number climbs, oldest first, one a minute up to a minute ago."""
    count = len(values)
    records = [
        {
            "timestamp": started(count - i),
            "service": names.service,
            "level": "WARN",
            "message": f"pool usage high: {value}%, waiting {i}",
        }
        for i, value in enumerate(values)
    ]
    texts = [LogLine.model_validate(record).ref_text() for record in records]
    return message(
        7, "query_logs", "logs", records, texts, arguments={"query": "error", "service": names.service}
    )


def cause_of(slots):
    [slot] = [slot for slot in slots if slot.ask.kind in ("cause", "change")]
    return slot


@per_world
def test_without_metrics_the_firing_alert_and_a_climbing_line_are_the_candidates(names):
    alert = alert_record(names, active_at=started(12), threshold=names.alert_threshold)
    messages = [service_alerts(names, [alert]), rising_lines(names, ["71.5", "80.0", "88.5", "93.0"])]

    slot = cause_of(read(cause_question(names), names, messages))

    onset = time_said(NOW - timedelta(minutes=12))
    assert slot.filled and slot.inference
    assert slot.conclusion.startswith(
        f"根因候选：{names.service}（{names.alert} 告警触发，{onset}起，{names.alert_threshold} → {names.alert_value}）；其次："
    )
    assert (
        f"{names.service}（日志「pool usage high」升高，{time_said(NOW - timedelta(minutes=4))}起，71.5% → 93.0%）"
        in slot.conclusion
    )
    assert slot.subjects == [names.service]
    # The alert's start is computed again from its record; every number is in a cited record.
    assert [n.statistic for n in slot.derived] == ["alert_start"]
    [kept] = slots_verified([slot], invocations=messages)
    assert kept.filled


@per_world
def test_a_number_the_records_do_not_hold_fails_the_check(names):
    alert = alert_record(names, active_at=started(12), threshold=names.alert_threshold)
    messages = [service_alerts(names, [alert]), rising_lines(names, ["71.5", "80.0", "88.5", "93.0"])]
    slot = cause_of(read(cause_question(names), names, messages))

    forged = slot.model_copy(update={"conclusion": slot.conclusion.replace("93.0%", "99.0%")})

    [kept] = slots_verified([forged], invocations=messages)
    assert not kept.filled and kept.why == "引用未通过核验"


@per_world
def test_nothing_that_moved_is_said_as_no_root_cause_evidence_with_what_was_searched(names):
    messages = [service_alerts(names, []), rising_lines(names, [])]

    slot = cause_of(
        read(cause_question(names), names, messages, tools=frozenset({"query_alerts", "query_logs"}))
    )

    assert slot.filled and not slot.inference
    assert slot.conclusion.startswith("未找到根因证据：指标源没有可读出服务关键信号")
    assert slot.conclusion.endswith(f"{names.service} 的告警与日志中也未见数值变化的告警或日志")


@per_world
def test_a_cause_is_still_left_open_to_the_executor(names):
    alert = alert_record(names, active_at=started(12), threshold=names.alert_threshold)

    slots = read(cause_question(names), names, [service_alerts(names, [alert])])

    assert f"{names.service} 的原因" in open_asks(slots)


@per_world
def test_what_changed_lists_the_moves_by_time(names):
    alert = alert_record(names, active_at=started(12), threshold=names.alert_threshold)
    messages = [service_alerts(names, [alert]), rising_lines(names, ["71.5", "80.0", "88.5", "93.0"])]

    slot = cause_of(read(f"What changed before {names.alert} started on {names.service}?", names, messages))

    assert slot.ask.kind == "change"
    first, second = slot.conclusion.removeprefix("变化（按时间）：").split("；")
    assert first.startswith(f"{names.service}（{names.alert} 告警触发，")
    assert second.startswith(f"{names.service}（日志「pool usage high」升高，")


@per_world
def test_with_a_log_series_source_the_service_whose_error_lines_rose_is_the_candidate(names):
    world = replace(slot_world(LOKI_TOOLS), services=frozenset(names.services))
    asks = asks_of(cause_question(names), names)
    [cause] = [ask for ask in asks if ask.kind == "cause"]
    # The error lines' query, then the addresses in lines' (no line names one here).
    (tool, arguments), (_, addresses) = [
        call for call in Cause().calls(cause, alerts=[], world=world) if call[0] == "query_logql"
    ]
    assert "| regexp `(?P<address>" in addresses["query"]
    minutes, start = arguments["minutes"], NOW - timedelta(minutes=15)
    points = [
        [(NOW - timedelta(minutes=k)).timestamp(), "9" if NOW - timedelta(minutes=k) > start else "0"]
        for k in range(minutes, -1, -1)
    ]
    records = [
        {"metric": {"service": names.service}, "values": points},
        {"metric": {"service": names.other}, "values": [[at, "2"] for at, _ in points]},
    ]
    texts = [SeriesRecord.model_validate(record).ref_text() for record in records]
    logs = message(8, tool, "series", records, texts, arguments=arguments, source="loki")
    messages = [service_alerts(names, []), logs]

    slot = cause_of(slots_read(asks, results=messages, world=world))

    onset = time_said(start + timedelta(minutes=1))
    assert slot.conclusion == f"根因候选：{names.service}（错误日志升高，{onset}起，0 条/3分钟 → 9 条/3分钟）"
    assert [n.statistic for n in slot.derived] == ["median", "median", "sample_time"]
    [kept] = slots_verified([slot], invocations=messages)
    assert kept.filled
