"""`logs`: the lines that have the asked property, by pattern with counts, on the asked service only.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    FakeToolbox,
    failed,
    logs_message,
    message,
    only,
    per_world,
    read,
    run,
)


@per_world
def test_logs_count_error_level_lines_by_pattern(names):
    lines = [
        ("ERROR", f"timeout calling {names.other} after 3000 ms"),
        ("ERROR", f"timeout calling {names.other} after 5000 ms"),
        ("error", "pool exhausted for request 42"),
        ("WARN", "retry 2 of 3"),
    ]

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [logs_message(names, lines)]))

    assert slot.filled
    assert slot.conclusion.startswith(
        f"最近 60 分钟 {names.service} 的错误日志 3 条（检索命中 4 条），2 种模式："
    )
    assert f"「timeout calling {names.other} after <*> ms」2 条" in slot.conclusion
    assert "「pool exhausted for request <*>」1 条" in slot.conclusion
    assert "retry" not in slot.conclusion
    # One example line cited per pattern.
    assert [b.raw_path for b in slot.bindings] == ["$.logs[0]", "$.logs[2]"]


@per_world
def test_another_services_error_lines_never_fill_a_services_logs_slot(names):
    lines = logs_message(names, [("ERROR", "pool exhausted for request 42")])
    others = lines.model_copy(
        update={
            "arguments": {"query": "error", "service": names.other},
            "records": [line.model_copy(update={"service": names.other}) for line in lines.records],
        }
    )
    own = message(8, "query_logs", "logs", [], [], arguments={"query": "error", "service": names.service})

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [others, own]))

    assert "pool exhausted" not in slot.conclusion
    assert all(binding.source_invocation_id != others.invocation_id for binding in slot.bindings)


@per_world
def test_logs_whose_matched_lines_are_all_below_error_say_so(names):
    lines = [("WARN", "retry 2 of 3"), ("info", "request served")]

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [logs_message(names, lines)]))

    assert slot.filled
    assert f"{names.service} 匹配的 2 条日志级别为 INFO、WARN，均低于 ERROR" in slot.conclusion


@per_world
def test_a_plain_logs_ask_about_a_service_shows_all_its_lines_by_pattern(names):
    lines = [
        ("WARN", "retry 2 of 3"),
        ("INFO", "request served in 12 ms"),
        ("INFO", "request served in 9 ms"),
    ]

    slot = only(read(f"show {names.service} logs", names, [logs_message(names, lines)]))

    assert slot.filled
    assert f"{names.service} 的日志 3 条（检索命中 3 条），2 种模式：" in slot.conclusion
    # A pattern of more than one line says when its lines were written, oldest to newest.
    assert "「request served in <*> ms」2 条（14:57:00–14:58:00）" in slot.conclusion
    assert "「retry <*> of <*>」1 条" in slot.conclusion
    assert [b.raw_path for b in slot.bindings] == ["$.logs[1]", "$.logs[0]"]


@per_world
def test_a_timeout_ask_counts_only_the_lines_that_state_a_timeout(names):
    lines = [
        ("INFO", "Notification time out: 60000"),
        ("INFO", "Established session 0x14ede63a5a70000 with negotiated timeout 10000 for client"),
        ("INFO", "Notification time out: 60000"),
    ]

    slot = only(read(f"{names.service} 有没有超时日志", names, [logs_message(names, lines)]))

    assert (
        f"{names.service} 的超时日志 2 条（检索命中 3 条），1 种模式：「Notification time out: <*>」2 条"
        in (slot.conclusion)
    )
    assert "negotiated" not in slot.conclusion


@per_world
def test_counts_over_fewer_lines_than_the_source_matched_say_how_many_were_counted(names):
    lines = [("ERROR", f"upstream {names.other} refused connection {i}") for i in range(20)]
    served = logs_message(names, lines)
    served.details["total"] = 57

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [served]))

    assert f"{names.service} 的错误日志 20 条（检索命中 57 条，按最新 20 条统计）" in slot.conclusion


@per_world
def test_logs_when_the_log_source_failed_are_unfilled(names):
    down = failed(7, "query_logs", arguments={"query": "error", "service": names.service}, source="loki")

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [down]))

    assert not slot.filled
    assert slot.why == "数据源 loki 调用失败"


@per_world
def test_logs_are_searched_on_the_asked_service_for_the_topic(names):
    toolbox = FakeToolbox(names)

    run(f"{names.service} 的日志里有什么报错", names, toolbox)

    assert toolbox.calls == [("query_logs", {"query": "error", "service": names.service})]
