"""`existence`: yes or no for the asked alert, with its state and current value; a no only when the
source's answer can be cited. Every behaviour holds on two worlds: plain names (checkout, billing-db,
node) and the demo world's (order-service, payment-service)."""

from __future__ import annotations

from tests.diagnosis.pipeline.asks.support import (
    Names,
    alert_record,
    alerts_message,
    only,
    per_world,
    read,
)
from tools.evidence.result import NO_EVIDENCE_PATH, Ref


def existence_question(names: Names) -> str:
    return f"是否存在 {names.alert} 告警"


def alert_query(names: Names, records: list[dict]) -> dict:
    return alerts_message(1, records, arguments={"alert_name": names.alert})


@per_world
def test_a_firing_alert_is_a_yes_with_its_state_and_value(names):
    slot = only(read(existence_question(names), names, [alert_query(names, [alert_record(names)])]))

    assert slot.filled
    assert slot.said() == (
        f"是，{names.service} 的 {names.alert} 告警（firing，critical），当前值 {names.alert_value}"
        " · 来源 Alertmanager"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.alerts[0]"]


@per_world
def test_an_alert_the_source_says_is_absent_is_a_cited_no(names):
    absent = alert_query(names, []).model_copy(
        update={"refs": [Ref(path=NO_EVIDENCE_PATH, text="no alerts matched")]}
    )

    slot = only(read(existence_question(names), names, [absent]))

    assert slot.filled
    assert slot.said() == f"否，未发现 {names.alert} 告警 · 来源 Alertmanager"
    assert [b.raw_path for b in slot.bindings] == [NO_EVIDENCE_PATH]


@per_world
def test_no_alert_and_nothing_to_cite_leaves_the_existence_unfilled(names):
    slot = only(read(existence_question(names), names, [alert_query(names, [])]))

    assert not slot.filled
    assert slot.why == "未能查询告警状态"
