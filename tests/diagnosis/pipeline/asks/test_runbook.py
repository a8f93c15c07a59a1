"""`runbook`: the steps of the subject's runbook section, quoted; never another subject's runbook.
Every behaviour holds on two worlds: plain names (checkout, billing-db, node) and the demo world's
(order-service, payment-service)."""

from __future__ import annotations

from diagnosis.pipeline.asks.slots import (
    slot_gap,
)
from tests.diagnosis.pipeline.asks.support import (
    FakeToolbox,
    Names,
    alert_record,
    alerts_message,
    block,
    knowledge_message,
    only,
    per_world,
    read,
    run,
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
    assert slot.said() == (
        f"处理手册《{names.alert} 处理手册》：1. 查看最近一次发布；2. 检查下游依赖 · 来源 runbooks/{names.alert}.md"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.evidence_blocks[1]"]


@per_world
def test_a_runbook_ask_quotes_the_steps_of_the_mitigation_section_numbered_as_in_the_file(names):
    slot = only(
        read(f"{names.alert} 怎么处理", names, [knowledge_message(names, blocks=sectioned_runbook(names))])
    )

    assert slot.said() == (
        f"处理手册《{names.alert} 处理手册 · 处置措施》：1. 回滚到上一版本；2. 扩容 · 来源 runbooks/{names.alert}.md"
    )
    assert [b.raw_path for b in slot.bindings] == ["$.evidence_blocks[3]"]


@per_world
def test_without_a_mitigation_section_the_diagnosis_steps_are_quoted_not_the_meaning(names):
    blocks = sectioned_runbook(names)[:3]

    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names, blocks=blocks)]))

    assert slot.said().startswith(f"处理手册《{names.alert} 处理手册 · 排查步骤》：1. 查看最近一次发布；2.")


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

    assert "《Diagnosis》：- Check the last deploy." in slot.said()


@per_world
def test_a_past_case_answers_when_no_runbook_matched(names):
    slot = only(read(f"{names.alert} 怎么处理", names, [knowledge_message(names, with_runbook=False)]))

    assert slot.said().startswith(f"历史案例《{names.alert} 历史案例》：上次扩容后恢复")


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
    assert "1. Check the last deploy." in slot.said()


@per_world
def test_a_runbook_ask_about_an_alert_follows_its_runbook_url_to_the_file(names):
    url = f"https://git.example.org/ops/runbooks/blob/main/team/{names.alert.lower()}-steps.MD"
    toolbox = FakeToolbox(names, annotations={"runbook_url": url})

    run(f"{names.alert} 的 runbook 第一步要检查什么？", names, toolbox)

    (alerts,), ((tool, arguments),) = toolbox.turns
    assert alerts == ("query_alerts", {"alert_name": names.alert})
    # The alert, its runbook file's stem, the alert's topic word if any, the steps' intents.
    words = arguments["query"].split()
    assert (tool, words[:2], words[-2:]) == (
        "lookup_knowledge",
        [names.alert, f"{names.alert.lower()}-steps"],
        ["处置", "排查"],
    )


@per_world
def test_a_runbook_ask_about_nothing_named_makes_no_alert_call(names):
    toolbox = FakeToolbox(names)

    run("连接池耗尽怎么处理", names, toolbox)

    assert [tool for tool, _ in toolbox.calls] == ["lookup_knowledge"]
