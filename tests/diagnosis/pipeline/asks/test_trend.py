"""`trend`: a range query over the asked window, read as first, last, min and max.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    FakeToolbox,
    T,
    alert_record,
    alerts_message,
    metric_of,
    only,
    per_world,
    read,
    run,
    series_message,
)


@per_world
def test_a_trend_gives_first_last_min_and_max_of_the_range(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    values = [[T - 1800, "0.2"], [T - 1200, "0.9"], [T - 600, "0.1"], [T, "0.4"]]
    record = {"metric": metric_of(names.alert_series), "values": values}
    series = series_message(2, names.alert_series, [record], minutes=60)

    slot = only(read(f"{names.service} 过去 1 小时{names.service_metric}趋势", names, [alerts, series]))

    assert slot.filled
    assert "过去 1 小时：起 0.2，末 0.4，最小 0.1，最大 0.9（4 个采样）" in slot.conclusion


@per_world
def test_without_prometheus_a_trend_is_unfilled_saying_prometheus_is_needed(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})

    slot = only(read(f"{names.service} 过去 1 小时{names.service_metric}趋势", names, [alerts]))

    assert not slot.filled
    assert "Prometheus" in slot.why


@per_world
def test_a_trend_asks_the_alerts_series_over_the_window(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 过去 1 小时{names.service_metric}趋势", names, toolbox)

    assert toolbox.turns[1] == [("query_promql", {"query": names.alert_series, "minutes": 60})]
