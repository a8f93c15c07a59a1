"""`health`: the scrape targets, the down ones with their last error.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    FakeToolbox,
    Names,
    message,
    only,
    per_world,
    read,
    run,
)


def targets_message(names: Names, down: bool = True) -> dict:
    targets = [
        {"job": names.job, "instance": "10.0.0.1:9100", "health": "up", "last_error": ""},
        {
            "job": names.other,
            "instance": "10.0.0.2:9187",
            "health": "down" if down else "up",
            "last_error": "connection refused" if down else "",
        },
    ]
    texts = [f"{t['job']} {t['instance']} {t['health']} {t['last_error']}".strip() for t in targets]
    return message(6, "query_targets", "targets", targets, texts)


@per_world
def test_health_lists_the_down_targets_with_their_last_error(names):
    slot = only(read("Any scrape targets down?", names, [targets_message(names)]))

    assert slot.filled
    assert slot.said() == (
        f"2 个抓取目标中 1 个不健康：{names.other} 10.0.0.2:9187（down，lastError：connection refused）"
        " · 来源 Prometheus"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.targets[1]"]


@per_world
def test_health_says_when_every_target_is_up(names):
    slot = only(read("Prometheus 的抓取目标挂了吗", names, [targets_message(names, down=False)]))

    assert slot.said().startswith("2 个抓取目标全部 up")


@per_world
def test_health_without_prometheus_is_unfilled(names):
    slot = only(read("Any scrape targets down?", names, [], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot.why == "抓取目标的健康状况需要 Prometheus 数据源（未配置）"


@per_world
def test_health_asks_the_scrape_targets_only(names):
    toolbox = FakeToolbox(names)

    run("Any scrape targets down?", names, toolbox)

    assert toolbox.calls == [("query_targets", {})]
