"""`logs`: the lines that have the asked property, by pattern with counts, on the asked service only.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

import pytest

from diagnosis.pipeline.asks.slots import slots_read
from tests.diagnosis.pipeline.asks.support import (
    FakeToolbox,
    asks_of,
    failed,
    logs_message,
    message,
    only,
    per_world,
    read,
    run,
    slot_world,
)
from tools.evidence.logs.record import LogCount


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


# --- Counts of lines by what their format says --------------------------------------------------------


def counts_message(
    names, arguments: dict, records: list[dict], *, query: str = "sum(count_over_time(…))"
) -> object:
    """A count_logs result as the toolbox returns it, each count cited by the text it writes."""
    stored = [
        {
            "service": arguments.get("service", ""),
            "measure": arguments["measure"],
            "status": arguments.get("status", ""),
            "slower_than_ms": str(arguments.get("slower_than_ms", 1000)),
            "minutes": 60,
            "query": query,
            "counted_over": "window",
        }
        | record
        for record in records
    ]
    texts = [LogCount.model_validate(record).ref_text() for record in stored]
    return message(12, "count_logs", "counts", stored, texts, arguments=arguments, source="loki")


@per_world
@pytest.mark.parametrize(
    ("question", "measure"),
    [
        ("{service} 的 404 多不多？", {"measure": "path", "status": "404"}),
        ("404s by path on {service}", {"measure": "path", "status": "404"}),
        ("Which {service} paths answer 404, and how often?", {"measure": "path", "status": "404"}),
        ("{service} 5xx 有多少条，按路径", {"measure": "path", "status": "5xx"}),
        ("{service} 的状态码分布", {"measure": "status", "status": ""}),
        ("{service} 有哪几类错误？", {"measure": "class", "topic": "error"}),
        ("error lines by class for {service}", {"measure": "class", "topic": "error"}),
        ("{service} 慢查询有几条？最慢的是哪个", {"measure": "slow", "topic": "slow_query"}),
        ("slow requests over 2s on {service}", {"measure": "slow", "threshold_ms": 2000}),
        ("{service} 超过 500 ms 的慢查询", {"measure": "slow", "threshold_ms": 500, "topic": "slow_query"}),
        (
            "Which {service} queries took longer than 500 ms, and which was the slowest?",
            {"measure": "slow", "threshold_ms": 500},
        ),
    ],
)
def test_a_count_of_lines_is_read_as_a_logs_ask_with_its_measure(names, question, measure):
    [ask] = asks_of(question.format(service=names.service), names)

    assert (ask.kind, ask.service) == ("logs", names.service)
    assert {key: getattr(ask, key) for key in measure} == measure


@per_world
@pytest.mark.parametrize(
    "question",
    [
        "why is {service} slow?",
        "{service} 的 p99 延迟是多少",
        "{service} 5xx 占比是多少",
        "{service} 每秒 404 多少",
    ],
)
def test_a_cause_a_latency_value_and_a_ratio_are_no_count_of_lines(names, question):
    asks = asks_of(question.format(service=names.service), names)

    assert not [ask for ask in asks if ask.measure]


@per_world
def test_a_count_by_path_is_its_call_alone_and_slow_lines_keep_their_search(names):
    by_path, slow = FakeToolbox(names), FakeToolbox(names)

    run(f"最近 30 分钟 {names.service} 的 404 多不多？", names, by_path)
    run(f"{names.service} 慢查询有几条？", names, slow)

    assert by_path.calls == [
        ("count_logs", {"measure": "path", "service": names.service, "status": "404", "minutes": 30})
    ]
    assert [tool for tool, _ in slow.calls] == ["query_logs", "count_logs"]


@per_world
def test_404s_by_path_are_the_total_then_each_path_cited_by_its_count(names):
    arguments = {"measure": "path", "service": names.service, "status": "404"}
    counts = counts_message(
        names,
        arguments,
        [
            {"group": {}, "count": 7},
            {"group": {"path": "/api/v1/legacy-cart"}, "count": 4},
            {"group": {"path": "/favicon.ico"}, "count": 2},
            {"group": {"path": "/wp-login.php"}, "count": 1},
        ],
    )

    slot = only(read(f"{names.service} 的 404 多不多？", names, [counts]))

    assert slot.filled
    assert slot.conclusion == (
        f"最近 60 分钟 {names.service} 状态码 404 的访问日志 7 条（LogQL 统计整个窗口），按路径："
        "「/api/v1/legacy-cart」4 条、「/favicon.ico」2 条、「/wp-login.php」1 条"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.counts[0]", "$.counts[1]", "$.counts[2]", "$.counts[3]"]
    assert slot.source == "loki"


@per_world
def test_error_classes_list_the_classes_with_counts_and_the_rest(names):
    arguments = {"measure": "class", "service": names.service}
    groups = [{"group": {"class": f"class-{i}"}, "count": 10 - i} for i in range(10)]
    counts = counts_message(names, arguments, [{"group": {}, "count": 60}, *groups])

    slot = only(read(f"{names.service} 有哪几类错误？", names, [counts]))

    assert slot.conclusion.startswith(
        f"最近 60 分钟 {names.service} 的错误日志 60 条（LogQL 统计整个窗口），按类别：「class-0」10 条"
    )
    # Eight classes listed; the lines of the others are said, not dropped.
    assert slot.conclusion.endswith("「class-7」3 条，其余 8 条")
    assert len(slot.bindings) == 9


@per_world
def test_slow_lines_are_the_count_over_the_threshold_and_the_slowest_line(names):
    arguments = {"measure": "slow", "service": names.service}
    line = (
        "2026-12-02 01:56:59.660 UTC [4242] shop@shop 00000 LOG:  duration: 4105.770 ms  statement: SELECT 1"
    )
    counts = counts_message(
        names, arguments, [{"group": {}, "count": 3, "slowest_ms": "4105.77", "line": line}]
    )

    slot = only(read(f"{names.service} 慢查询有几条？最慢的是哪个", names, [counts]))

    assert slot.conclusion == (
        f"最近 60 分钟 {names.service} 耗时超过 1000 ms 的数据库慢查询日志 3 条（LogQL 统计整个窗口），"
        f"最慢 4105.77 ms：「{line}」"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.counts[0]"]


@per_world
def test_a_count_over_a_sample_says_so(names):
    arguments = {"measure": "class", "service": names.service}
    counts = counts_message(
        names,
        arguments,
        [
            {"group": {}, "count": 5, "counted_over": "sample:500", "query": ""},
            {
                "group": {"class": "java.io.IOException"},
                "count": 5,
                "counted_over": "sample:500",
                "query": "",
            },
        ],
    )

    slot = only(read(f"{names.service} 有哪几类错误？", names, [counts]))

    assert "的错误日志 5 条（按最新 500 条日志统计）" in slot.conclusion


@per_world
def test_nothing_counted_for_a_status_says_none_was_found(names):
    arguments = {"measure": "path", "service": names.service, "status": "404"}
    empty = message(
        12,
        "count_logs",
        "counts",
        [],
        [],
        arguments=arguments,
        source="loki",
        refs=[{"raw_path": "$.no_evidence", "text": "在 日志统计（服务 x）中未检索到匹配记录"}],
    )

    slot = only(read(f"{names.service} 的 404 多不多？", names, [empty]))

    assert slot.filled
    assert slot.conclusion == f"最近 60 分钟未检索到 {names.service} 状态码 404 的访问日志"


@per_world
def test_no_slow_line_counted_leaves_the_slot_to_the_lines_that_say_slow(names):
    arguments = {"measure": "slow", "service": names.service}
    empty = message(
        12,
        "count_logs",
        "counts",
        [],
        [],
        arguments=arguments,
        source="loki",
        refs=[{"raw_path": "$.no_evidence", "text": "在 日志统计 中未检索到匹配记录"}],
    )
    lines = logs_message(names, [("WARN", "slow request: GET /api/items")])

    slot = only(read(f"{names.service} 的慢请求日志", names, [empty, lines]))

    assert "slow request: GET /api/items" in slot.conclusion


@per_world
def test_a_failed_count_leaves_the_slot_unfilled(names):
    broken = failed(12, "count_logs", arguments={"measure": "class", "service": names.service}, source="loki")

    slot = only(read(f"{names.service} 有哪几类错误？", names, [broken]))

    assert not slot.filled and slot.why == "数据源 loki 调用失败"


@per_world
def test_logs_without_a_log_source_say_none_is_configured(names):
    slot = only(read(f"{names.service} 的日志里有什么报错", names, [], tools=frozenset({"query_alerts"})))

    assert not slot.filled
    assert slot.why == "未配置日志源"


@per_world
def test_a_status_share_is_said_from_the_count_by_status_beside_it(names):
    [plain] = asks_of(f"{names.service} 的状态码分布", names)
    ask = plain.model_copy(update={"share": "5xx"})
    counts = counts_message(
        names,
        {"measure": "status", "service": names.service},
        [
            {"group": {}, "count": 400},
            {"group": {"status": "200"}, "count": 280},
            {"group": {"status": "502"}, "count": 100},
            {"group": {"status": "503"}, "count": 8},
            {"group": {"status": "404"}, "count": 12},
        ],
    )

    slot = only(slots_read([ask], results=[counts], world=slot_world()))

    assert slot.conclusion.endswith("；其中 5xx 共 108 条，占 27.00%")
    assert len(slot.bindings) == 5
