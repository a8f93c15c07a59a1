"""Slots: each ask's slot is filled by code from recorded tool output only, says its
conclusion in one `结论` line, and stays filled only when the gatekeeper verifies what it cites; an
unfilled slot says why, as a `未能回答：…` gap. Every behaviour holds on two worlds: plain names
(checkout, billing-db, node) and the demo world's (order-service, payment-service)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from diagnosis.pipeline.asks.slots import (
    conclusion_lines,
    coverage_gaps,
    restated_conclusion,
    slot_gap,
    slots_read,
    slots_verified,
)
from diagnosis.pipeline.slot import Slot
from tests.diagnosis.pipeline.slot_support import (
    NO_PROMETHEUS,
    NOW,
    WORLD_IDS,
    WORLDS,
    Names,
    alert_record,
    alerts_message,
    asks_of,
    failed,
    message,
    recorded,
    slot_world,
)
from tools.loglines import evidence_text

per_world = pytest.mark.parametrize("names", WORLDS, ids=WORLD_IDS)
# How far each world's alert value is past its threshold (0.3279 / 0.023, 0.91 / 0.85).
RATIO = {"plain": "14.2565", "demo": "1.07059"}
T = NOW.timestamp()


def read(query: str, names: Names, messages: list[dict], *, tools=None) -> list[Slot]:
    world = slot_world(tools) if tools else slot_world()
    return slots_read(asks_of(query, names), messages=messages, world=world)


def only(slots: list[Slot]) -> Slot:
    assert len(slots) == 1, slots
    return slots[0]


def metric_of(series: str) -> dict:
    """The labels of a series written `name{label="value"}`."""
    name, _, rest = series.partition("{")
    labels = dict(part.split("=", 1) for part in rest.rstrip("}").split(",") if part)
    return {"__name__": name} | {key: value.strip('"') for key, value in labels.items()}


def series_message(
    invocation_id: int, query: str, records: list[dict], *, minutes: int = 0, extra: dict | None = None
) -> dict:
    texts = [f"{query} {r.get('value') or r.get('values')}" for r in records]
    return message(
        invocation_id,
        "query_promql",
        "series",
        records,
        texts,
        arguments={"query": query, "minutes": minutes},
        extra=extra,
    )


def value_question(names: Names) -> str:
    return f"{names.service} 服务的{names.service_metric}现在是多少？"


# --- value ------------------------------------------------------------------------------------


@per_world
def test_a_value_is_the_instant_sample_of_the_alerts_series_with_its_name_and_threshold(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    sample = {"metric": metric_of(names.alert_series), "value": [T - 10, names.alert_value]}
    series = series_message(2, names.alert_series, [sample])

    slot = only(read(value_question(names), names, [alerts, series]))

    assert slot.filled
    percent = f"{Decimal(names.alert_value) * 100:.2f}%"
    assert slot.conclusion.startswith(
        f"{names.alert_series} 当前值 {names.alert_value}（{percent}）（采样时间"
    )
    assert f"{names.alert} 阈值 > {names.alert_threshold}" in slot.conclusion
    assert f"为阈值的 {RATIO[names.id]} 倍" in slot.conclusion
    assert slot.conclusion.endswith("· 来源 prometheus")
    assert [(b.tool_name, b.source_invocation_id, b.raw_path) for b in slot.bindings] == [
        ("query_promql", 2, "$.series[0]")
    ]


@per_world
def test_without_prometheus_a_value_is_the_alert_records_own_value(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})

    slot = only(read(value_question(names), names, [alerts], tools=NO_PROMETHEUS))

    assert slot.filled
    assert slot.conclusion == (
        f"{names.service} 的 {names.alert} 当前值 {names.alert_value} · 来源 alertmanager"
    )
    assert [(b.source_invocation_id, b.raw_path) for b in slot.bindings] == [(1, "$.alerts[0]")]


@per_world
def test_without_prometheus_a_topics_value_is_never_another_topics_alert_value(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})

    slot = only(read(f"{names.service} 的磁盘情况怎么样", names, [alerts], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot_gap(slot).startswith(f"未能回答：{names.service} 的当前值 — ")
    assert names.alert not in slot_gap(slot)


@per_world
def test_a_named_metric_is_answered_from_its_own_series(names):
    sample = {"metric": {"__name__": "node_load1", "instance": "10.0.0.7:9100"}, "value": [T, "1.5"]}

    slot = only(read("node_load1 当前是多少", names, [series_message(3, "node_load1", [sample])]))

    assert slot.filled
    assert slot.conclusion.startswith('node_load1{instance="10.0.0.7:9100"} 当前值 1.5')


@per_world
def test_a_series_with_no_data_leaves_the_value_unfilled_saying_so(names):
    slot = only(read("node_load1 当前是多少", names, [series_message(3, "node_load1", [])]))

    assert not slot.filled
    assert slot.why == "查询 node_load1 没有数据"
    assert slot_gap(slot) == "未能回答：node_load1 的当前值 — 查询 node_load1 没有数据"


@per_world
def test_a_failed_alert_source_leaves_the_value_unfilled_naming_the_source(names):
    down = failed(1, "query_metrics", arguments={"service": names.service}, source="alertmanager")

    slot = only(read(value_question(names), names, [down], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot.why == "数据源 alertmanager 调用失败"
    assert coverage_gaps([slot]) == [f"未能回答：{names.service} 的当前值 — 数据源 alertmanager 调用失败"]
    assert conclusion_lines([slot]) == []


# --- threshold ----------------------------------------------------------------------------------


@per_world
def test_a_threshold_is_read_from_the_alert_rules_expr_with_how_far_past_it_the_value_is(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert threshold.filled
    assert threshold.conclusion == (
        f"{names.alert} 的阈值：{names.alert_series} > {names.alert_threshold}（告警规则 expr）；"
        f"当前值 {names.alert_value}，为阈值的 {RATIO[names.id]} 倍 · 来源 alertmanager"
    )


@per_world
def test_a_threshold_written_the_other_way_round_reads_the_same(names):
    record = alert_record(names, expr=f"{names.alert_threshold} < {names.alert_series}")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert f"{names.alert_series} > {names.alert_threshold}（告警规则 expr）" in threshold.conclusion


@per_world
def test_without_an_expr_the_threshold_is_the_records_own(names):
    record = alert_record(names, expr="", value="92%", threshold="80%")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert threshold.filled
    assert threshold.conclusion.startswith(f"{names.alert} 的阈值 80%，当前值 92%")


@per_world
def test_an_alert_with_no_rule_and_no_threshold_leaves_the_threshold_unfilled(names):
    record = alert_record(names, expr="")
    alerts = alerts_message(1, [record], arguments={"alert_name": names.alert})

    slots = read(f"{names.alert} 的阈值是多少", names, [alerts], tools=NO_PROMETHEUS)
    threshold = next(s for s in slots if s.ask.kind == "threshold")

    assert not threshold.filled
    assert threshold.why == "告警记录没有规则表达式或阈值"


# --- trend ----------------------------------------------------------------------------------------


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


# --- history --------------------------------------------------------------------------------------


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
    kept["output"]["retention_minutes"] = 24 * 60

    slot = only(read(f"上周 {names.other} 出过什么问题？", names, [kept]))

    assert slot.filled
    assert "过去 7 天（上周）" in slot.conclusion
    assert slot.line().endswith("Prometheus 只保留最近 1 天 的指标，更早的看不到）")


@per_world
def test_history_within_the_retention_states_no_limit(names):
    kept = history_message(names, [episodes(names.other_alert, names.other, 1)])
    kept["output"]["retention_minutes"] = 15 * 24 * 60

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


# --- list and priority ----------------------------------------------------------------------------


def firing_world(names: Names) -> list[dict]:
    """A warning far past its threshold, a critical just past it and a critical far past it."""
    return [
        alert_record(names, other=True, value=str(float(names.other_threshold) * 50)),
        alert_record(names, value=str(float(names.alert_threshold) * 1.01)),
        alert_record(names, alert_name=f"{names.alert}Severe", value=str(float(names.alert_threshold) * 20)),
        alert_record(names, alert_name=f"{names.alert}Pending", state="pending"),
    ]


@per_world
def test_priority_puts_critical_before_warning_then_the_furthest_past_its_threshold(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("哪个服务最需要先处理？", names, [alerts]))

    assert slot.filled
    assert slot.conclusion.startswith(
        f"最需要先处理：{names.service} 的 {names.alert}Severe 告警（firing，critical）"
    )
    text = slot.conclusion
    assert (
        text.index(f"{names.alert}Severe") < text.index(f"{names.alert} 告警") < text.index(names.other_alert)
    )
    assert "Pending" not in text


@per_world
def test_the_list_numbers_every_firing_alert_in_priority_order(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("现在有哪些告警", names, [alerts]))

    assert slot.conclusion.startswith("当前 3 个 firing 告警（按优先级）：1. ")
    assert f"1. {names.service} 的 {names.alert}Severe" in slot.conclusion
    assert f"3. {names.other} 的 {names.other_alert}" in slot.conclusion
    assert len(slot.bindings) == 3


@per_world
def test_an_english_priority_question_orders_the_same_way(names):
    alerts = alerts_message(1, firing_world(names))

    slot = only(read("which alert should I handle first?", names, [alerts]))

    assert f"最需要先处理：{names.service} 的 {names.alert}Severe" in slot.conclusion


# --- health -----------------------------------------------------------------------------------------


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
    assert slot.conclusion == (
        f"2 个抓取目标中 1 个不健康：{names.other} 10.0.0.2:9187（down，lastError：connection refused）"
        " · 来源 prometheus"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.targets[1]"]


@per_world
def test_health_says_when_every_target_is_up(names):
    slot = only(read("Prometheus 的抓取目标挂了吗", names, [targets_message(names, down=False)]))

    assert slot.conclusion.startswith("2 个抓取目标全部 up")


@per_world
def test_health_without_prometheus_is_unfilled(names):
    slot = only(read("Any scrape targets down?", names, [], tools=NO_PROMETHEUS))

    assert not slot.filled
    assert slot.why == "抓取目标的健康状况需要 Prometheus 数据源（未配置）"


# --- logs -------------------------------------------------------------------------------------------


def logs_message(names: Names, lines: list[tuple[str, str]]) -> dict:
    records = [
        {"timestamp": f"2026-11-29 14:5{9 - i}:00", "service": names.service, "level": level, "message": text}
        for i, (level, text) in enumerate(lines)
    ]
    texts = [evidence_text(record) for record in records]
    return message(
        7,
        "query_logs",
        "logs",
        records,
        texts,
        arguments={"query": "error", "service": names.service},
        source="loki",
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
    others = logs_message(names, [("ERROR", "pool exhausted for request 42")])
    others["arguments"] = {"query": "error", "service": names.other}
    for ref in others["evidence_refs"]:
        ref["text"] = ref["text"].replace(f"[{names.service}]", f"[{names.other}]")
    own = message(8, "query_logs", "logs", [], [], arguments={"query": "error", "service": names.service})

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [others, own]))

    assert "pool exhausted" not in slot.conclusion
    assert all(binding.source_invocation_id != others["invocation_id"] for binding in slot.bindings)


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
def test_patterns_count_every_line_served_also_beyond_the_messages_bounded_output(names):
    lines = [("ERROR", f"upstream {names.other} refused connection {i}") for i in range(12)]
    served = logs_message(names, lines)
    # The message lists only a prefix of long outputs; every line still has its evidence ref.
    served["output"] = {"logs": served["output"]["logs"][:4], "omitted_records": 8, "total": 12}

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [served]))

    assert f"{names.service} 的错误日志 12 条（检索命中 12 条）" in slot.conclusion
    assert f"「upstream {names.other} refused connection <*>」12 条" in slot.conclusion


@per_world
def test_counts_over_fewer_lines_than_the_source_matched_say_how_many_were_counted(names):
    lines = [("ERROR", f"upstream {names.other} refused connection {i}") for i in range(20)]
    served = logs_message(names, lines)
    served["output"]["total"] = 57

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [served]))

    assert f"{names.service} 的错误日志 20 条（检索命中 57 条，按最新 20 条统计）" in slot.conclusion


@per_world
def test_logs_when_the_log_source_failed_are_unfilled(names):
    down = failed(7, "query_logs", arguments={"query": "error", "service": names.service}, source="loki")

    slot = only(read(f"{names.service} 的日志里有什么报错", names, [down]))

    assert not slot.filled
    assert slot.why == "数据源 loki 调用失败"


# --- runbook and action -----------------------------------------------------------------------------


def block(document: str, title: str, content: str, *, section: str = "", named: tuple[str, ...] = ()) -> dict:
    """A lookup_knowledge record: `named` are the block's exact terms the query named."""
    return {
        "source_document": document,
        "title": title,
        "section": section,
        "content": content,
        "matched_terms": list(named),
    }


def knowledge_message(names: Names, *, with_runbook: bool = True, blocks: list[dict] | None = None) -> dict:
    blocks = (
        blocks
        or [
            block("case:17", f"{names.alert} 历史案例", "上次扩容后恢复", named=(names.alert,)),
            block(
                f"runbooks/{names.alert}.md",
                f"{names.alert} 处理手册",
                "1. 查看最近一次发布\n2. 检查下游依赖",
                named=(names.alert,),
            ),
        ][: 2 if with_runbook else 1]
    )
    texts = [f"{b['title']}: {b['content']}" for b in blocks]
    return message(
        9,
        "lookup_knowledge",
        "evidence_blocks",
        blocks,
        texts,
        arguments={"query": names.alert},
        source="knowledge",
    )


def sectioned_runbook(names: Names) -> list[dict]:
    """One runbook of the alert in the order retrieval ranked its sections: meaning, causes, steps."""
    document, title = f"runbooks/{names.alert}.md", f"{names.alert} 处理手册"
    return [
        block(
            document,
            f"{title} · 告警含义",
            f"{names.alert} 表示错误率过高",
            section="告警含义",
            named=(names.alert,),
        ),
        block(
            document,
            f"{title} · 常见原因",
            "- 发布引入缺陷\n- 下游超时",
            section="常见原因",
            named=(names.alert,),
        ),
        block(
            document,
            f"{title} · 排查步骤",
            "1. 查看最近一次发布\n2. 检查下游依赖",
            section="排查步骤",
            named=(names.alert,),
        ),
        block(
            document,
            f"{title} · 处置措施",
            "1. 回滚到上一版本\n2. 扩容",
            section="处置措施",
            named=(names.alert,),
        ),
    ]


@per_world
def test_a_runbook_is_preferred_over_a_past_case_and_quoted_as_steps(names):
    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names)]))

    assert slot.filled
    assert slot.conclusion == (
        f"处理手册《{names.alert} 处理手册》：1. 查看最近一次发布；2. 检查下游依赖 · 来源 runbooks/{names.alert}.md"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.evidence_blocks[1]"]


@per_world
def test_a_runbook_ask_quotes_the_steps_of_the_mitigation_section_numbered_as_in_the_file(names):
    slot = only(
        read(f"{names.alert} 怎么处理", names, [knowledge_message(names, blocks=sectioned_runbook(names))])
    )

    assert slot.conclusion == (
        f"处理手册《{names.alert} 处理手册 · 处置措施》：1. 回滚到上一版本；2. 扩容 · 来源 runbooks/{names.alert}.md"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.evidence_blocks[3]"]


@per_world
def test_without_a_mitigation_section_the_diagnosis_steps_are_quoted_not_the_meaning(names):
    blocks = sectioned_runbook(names)[:3]

    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names, blocks=blocks)]))

    assert slot.conclusion.startswith(
        f"处理手册《{names.alert} 处理手册 · 排查步骤》：1. 查看最近一次发布；2."
    )


@per_world
def test_english_step_headings_are_steps_too(names):
    document = f"runbooks/{names.alert}.md"
    blocks = [
        block(document, "Meaning", "The error ratio is high.", section="Meaning", named=(names.alert,)),
        block(document, "Diagnosis", "- Check the last deploy.", section="Diagnosis", named=(names.alert,)),
    ]

    slot = only(
        read(
            f"what does the {names.alert} runbook recommend?",
            names,
            [knowledge_message(names, blocks=blocks)],
        )
    )

    assert "《Diagnosis》：- Check the last deploy." in slot.conclusion


@per_world
def test_a_past_case_answers_when_no_runbook_matched(names):
    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names, with_runbook=False)]))

    assert slot.conclusion.startswith(f"历史案例《{names.alert} 历史案例》：上次扩容后恢复")


@per_world
def test_a_runbook_that_does_not_name_the_asked_alert_is_not_its_runbook(names):
    # Found by the words it shares with the question, it names another alert: the asked one has none.
    blocks = [
        block(f"runbooks/{names.other_alert}.md", f"{names.other_alert} 处理手册", "1. 扩容", section="处置")
    ]

    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names, blocks=blocks)]))

    assert not slot.filled
    assert slot_gap(slot) == f"未能回答：{names.alert} 的处理手册步骤 — 没有匹配的处理手册"


@per_world
def test_an_alerts_runbook_url_names_its_runbook(names):
    url = f"https://wiki.example.org/Runbooks/team/{names.alert.lower()}-steps.md?plain=1"
    alerts = alerts_message(
        1, [alert_record(names, annotations={"runbook_url": url})], arguments={"alert_name": names.alert}
    )
    blocks = [
        block(
            f"runbooks/team/{names.alert.lower()}-steps.md",
            "Error ratio runbook",
            "1. Check the last deploy.",
            section="Mitigation",
            named=(f"{names.alert.lower()}-steps",),
        )
    ]

    slot = only(
        read(
            f"{names.alert} 的 runbook 第一步要检查什么？",
            names,
            [alerts, knowledge_message(names, blocks=blocks)],
        )
    )

    assert slot.filled
    assert "1. Check the last deploy." in slot.conclusion


@per_world
def test_an_action_is_answered_with_the_read_only_statement(names):
    slot = only(read(f"帮我重启 {names.other}", names, []))

    assert slot.filled
    assert slot.line() == "结论：本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作"
    assert slot.bindings == []


@per_world
def test_an_action_with_a_runbook_of_its_subjects_alert_points_at_its_steps(names):
    alerts = alerts_message(1, [alert_record(names, other=True)], arguments={"service": names.other})
    runbook = block(
        f"runbooks/{names.other_alert}.md",
        f"{names.other_alert} 处理手册 · 处置措施",
        "1. 扩容",
        section="处置措施",
        named=(names.other_alert,),
    )

    slot = only(read(f"帮我重启 {names.other}", names, [alerts, knowledge_message(names, blocks=[runbook])]))

    assert slot.conclusion == (
        "本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作；"
        f"可参考处理手册《{names.other_alert} 处理手册 · 处置措施》：1. 扩容 · 来源 runbooks/{names.other_alert}.md"
    )


@per_world
def test_an_action_is_never_pointed_at_another_services_runbook(names):
    # The other service has no alert; the runbook found names the first service's alert.
    alerts = alerts_message(1, [], arguments={"service": names.other})

    slot = only(read(f"帮我重启 {names.other}", names, [alerts, knowledge_message(names)]))

    assert slot.filled
    assert slot.line() == "结论：本助手只读取告警、指标、日志与处理手册，不能执行「重启」等操作"
    assert slot.bindings == []


# --- conclusion lines and gaps ---------------------------------------------------------------------


@per_world
def test_conclusion_lines_are_the_filled_slots_and_gaps_the_unfilled_ones(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.third})
    query = f"{names.third} 的 {names.third_metric}是多少，阈值是多少？"

    slots = read(query, names, [alerts], tools=NO_PROMETHEUS)

    assert [s.ask.kind for s in slots] == ["value", "threshold"]
    assert all(line.startswith("结论：") for line in conclusion_lines(slots))
    assert len(conclusion_lines(slots)) + len(coverage_gaps(slots)) == 2
    for gap in coverage_gaps(slots):
        assert gap.startswith(f"未能回答：{names.third} 的")


# --- verification ------------------------------------------------------------------------------------


@per_world
def test_a_slot_whose_citations_match_the_recorded_invocations_stays_filled(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slots = read(value_question(names), names, [alerts], tools=NO_PROMETHEUS)

    verified = slots_verified(slots, invocations=[recorded(alerts)])

    assert [s.filled for s in verified] == [True]
    assert verified[0].conclusion == slots[0].conclusion


@per_world
def test_a_slot_citing_text_the_recorded_invocation_does_not_hold_is_unfilled(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slots = read(value_question(names), names, [alerts], tools=NO_PROMETHEUS)
    invocation = recorded(alerts)
    invocation.retrieval_details["evidence_refs"][0]["text"] = (
        f"{names.other_alert} resolved service={names.other} value=3"
    )

    verified = slots_verified(slots, invocations=[invocation])

    assert [s.filled for s in verified] == [False]
    assert verified[0].why == "引用未通过核验"
    assert coverage_gaps(verified) == [f"未能回答：{names.service} 的当前值 — 引用未通过核验"]


@per_world
def test_a_slot_citing_an_invocation_never_recorded_is_unfilled(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slots = read(value_question(names), names, [alerts], tools=NO_PROMETHEUS)
    elsewhere = recorded(alerts)
    elsewhere.pk = 99

    verified = slots_verified(slots, invocations=[elsewhere])

    assert [s.filled for s in verified] == [False]


@per_world
def test_an_action_statement_needs_no_citation_and_stays_filled(names):
    slots = read(f"帮我重启 {names.other}", names, [])

    assert [s.filled for s in slots_verified(slots, invocations=[])] == [True]


@per_world
def test_a_sample_of_another_series_is_not_read_against_the_alerts_threshold(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    sample = {"metric": {"__name__": "node_load1", "job": "node"}, "value": [T - 10, "1.5"]}
    series = series_message(2, "node_load1", [sample])

    slot = only(read(value_question(names), names, [alerts, series]))

    assert slot.filled and 'node_load1{job="node"} 当前值 1.5' in slot.conclusion
    assert "阈值" not in slot.conclusion


@per_world
@pytest.mark.parametrize(
    ("metric", "raw", "shown"),
    [
        (
            "node_memory_MemAvailable_bytes",
            "21992013824",
            "当前值 21992013824 字节（约 21.99 GB / 20.48 GiB）",
        ),
        ("checkout_cache_hit_ratio", "0.3279", "当前值 0.3279（32.79%）"),
        ("http_request_duration_seconds", "6.904", "当前值 6.904 秒"),
        ("orders_created_total", "1520", "当前值 1520（"),
    ],
)
def test_a_value_is_read_in_its_unit_with_the_raw_number_beside_it(names, metric, raw, shown):
    sample = {"metric": {"__name__": metric, "job": "node"}, "value": [T - 10, raw]}

    slot = only(read(f"{metric} 当前值", names, [series_message(2, metric, [sample])]))

    assert shown in slot.conclusion


# --- A claim restating a conclusion line ---


def existence_slot(names: Names) -> Slot:
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slot = only(read(f"只确认 {names.service} 是否存在 {names.alert} 告警", names, [alerts]))
    assert slot.filled
    return slot


@per_world
def test_a_claim_copying_a_conclusion_line_or_part_of_it_restates_that_line(names):
    slot = existence_slot(names)

    assert restated_conclusion(slot.line(), [slot]) == slot.line()
    assert restated_conclusion(slot.conclusion.split(" · 来源")[0], [slot]) == slot.line()
    # Spacing and punctuation of the copy do not matter.
    assert restated_conclusion(slot.conclusion.replace("，", ", ").replace(" ", ""), [slot]) == slot.line()


@per_world
def test_a_claim_saying_more_than_the_conclusion_does_not_restate_it(names):
    slot = existence_slot(names)

    assert restated_conclusion(f"{slot.conclusion}，可能与同期发布有关", [slot]) == ""
    assert restated_conclusion(f"{names.other} 的 {names.other_alert} 告警", [slot]) == ""
    assert restated_conclusion(names.alert, [slot]) == ""  # a name in it is no copy of it
