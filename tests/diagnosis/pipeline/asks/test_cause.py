"""`cause`: the subject's symptoms (firing alerts, lines with the asked property) and, when both are
there, one inference linking them, labelled as unproven; the ask stays open to the executor, which
may reason further. Every behaviour holds on two worlds: plain names (checkout, billing-db, node)
and the demo world's (order-service, payment-service)."""

from __future__ import annotations

from diagnosis.pipeline.asks.slots import open_asks
from tests.diagnosis.pipeline.asks.support import (
    Names,
    alert_record,
    alerts_message,
    logs_message,
    per_world,
    read,
)
from tools.evidence.result import NO_EVIDENCE_PATH, Ref


def cause_question(names: Names) -> str:
    return f"{names.service} 为什么报错"


def timeouts(names: Names) -> list[tuple[str, str]]:
    return [
        ("ERROR", f"timeout calling {names.other} after 3000 ms"),
        ("ERROR", f"timeout calling {names.other} after 5000 ms"),
    ]


def service_alerts(names: Names, records: list[dict]) -> dict:
    return alerts_message(1, records, arguments={"service": names.service})


def cause_of(slots):
    [slot] = [slot for slot in slots if slot.ask.kind == "cause"]
    return slot


@per_world
def test_a_cause_pairs_the_firing_alert_with_the_lines_as_an_unproven_inference(names):
    messages = [service_alerts(names, [alert_record(names)]), logs_message(names, timeouts(names))]

    slot = cause_of(read(cause_question(names), names, messages))

    assert slot.filled
    assert slot.conclusion.startswith(
        f"{names.service} 的现象：{names.service} 的 {names.alert} 告警（firing，critical），当前值 {names.alert_value}；"
    )
    assert f"「timeout calling {names.other} after <*> ms」2 条" in slot.conclusion
    assert slot.conclusion.endswith(f"。推断（未证实）：{names.alert} 与同期日志可能相关，需人工确认")
    assert [b.raw_path for b in slot.bindings] == ["$.alerts[0]", "$.logs[0]"]


@per_world
def test_a_search_that_found_no_lines_is_said_beside_the_symptoms_never_as_one(names):
    searched = logs_message(names, []).model_copy(
        update={"refs": [Ref(path=NO_EVIDENCE_PATH, text="no log lines matched")]}
    )
    messages = [service_alerts(names, [alert_record(names)]), searched]

    slot = cause_of(read(cause_question(names), names, messages))

    assert slot.filled
    assert "推断" not in slot.conclusion
    assert slot.limits == [f"最近 60 分钟未检索到 {names.service} 的错误日志"]
    assert [b.raw_path for b in slot.bindings] == ["$.alerts[0]"]


@per_world
def test_no_firing_alert_and_no_lines_leave_the_cause_unfilled_naming_what_was_searched(names):
    messages = [service_alerts(names, []), logs_message(names, [])]

    slot = cause_of(read(cause_question(names), names, messages))

    assert not slot.filled
    assert slot.why == f"未找到原因证据（已检索 {names.service} 的告警与日志）"


@per_world
def test_a_filled_cause_is_still_left_open_to_the_executor(names):
    messages = [service_alerts(names, [alert_record(names)]), logs_message(names, timeouts(names))]

    slots = read(cause_question(names), names, messages)

    assert all(slot.filled for slot in slots)
    assert open_asks(slots) == [f"{names.service} 的原因"]


@per_world
def test_a_line_that_reads_like_a_source_is_kept_whole_in_the_cause(names):
    """The logs part of a cause is the logs slot's statement field, its source kept apart: a line with
    ` · 来源 ` in it is not cut there, and the logs' source is not said inside the cause."""
    lines = [("ERROR", "upstream refused · 来源 gateway"), ("ERROR", "upstream refused · 来源 gateway")]
    messages = [service_alerts(names, [alert_record(names)]), logs_message(names, lines)]

    slot = cause_of(read(cause_question(names), names, messages))

    assert "「upstream refused · 来源 gateway」2 条" in slot.conclusion
    assert "来源 loki" not in slot.conclusion
