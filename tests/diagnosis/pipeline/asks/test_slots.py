"""The runner of the slots: conclusion lines and gaps, a slot kept filled only when the gatekeeper
verifies what it cites, and a claim that restates a conclusion line.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from diagnosis.pipeline.asks.slots import (
    conclusion_lines,
    coverage_gaps,
    restated_conclusion,
    slots_verified,
)
from diagnosis.pipeline.slot import Slot
from tests.diagnosis.pipeline.asks.support import (
    NO_PROMETHEUS,
    Names,
    alert_record,
    alerts_message,
    only,
    per_world,
    read,
    recorded,
    value_question,
)


def existence_slot(names: Names) -> Slot:
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slot = only(read(f"只确认 {names.service} 是否存在 {names.alert} 告警", names, [alerts]))
    assert slot.filled
    return slot


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


@per_world
def test_a_slot_whose_citations_match_the_recorded_invocations_stays_filled(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slots = read(value_question(names), names, [alerts], tools=NO_PROMETHEUS)

    verified = slots_verified(slots, invocations=[alerts])

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

    verified = slots_verified(slots, invocations=[invocation.tool_result()])

    assert [s.filled for s in verified] == [False]
    assert verified[0].why == "引用未通过核验"
    assert coverage_gaps(verified) == [f"未能回答：{names.service} 的当前值 — 引用未通过核验"]


@per_world
def test_a_slot_citing_an_invocation_never_recorded_is_unfilled(names):
    alerts = alerts_message(1, [alert_record(names)], arguments={"service": names.service})
    slots = read(value_question(names), names, [alerts], tools=NO_PROMETHEUS)
    elsewhere = recorded(alerts)
    elsewhere.pk = 99

    verified = slots_verified(slots, invocations=[elsewhere.tool_result()])

    assert [s.filled for s in verified] == [False]


@per_world
def test_an_action_statement_needs_no_citation_and_stays_filled(names):
    slots = read(f"帮我重启 {names.other}", names, [])

    assert [s.filled for s in slots_verified(slots, invocations=[])] == [True]


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
