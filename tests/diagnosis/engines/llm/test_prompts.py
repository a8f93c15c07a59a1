import json
import re

import pytest
from jinja2 import UndefinedError

from diagnosis.engines.llm.prompts import prompt_render

PLANNER_VARIABLES = {
    "query": "只确认 order-service 是否存在 HighMemoryUsage 告警",
    "round": 1,
    "retry_context": None,
}
STAGE_VARIABLES = {
    "planner": PLANNER_VARIABLES,
    "executor": {
        "query": "只确认 order-service 是否存在 HighMemoryUsage 告警",
        "round": 1,
        "plan": {"goal": "确认告警", "steps": [], "narrow_scope": True, "focus": [], "excluded_topics": []},
        "retry_context": None,
        "prior_tool_messages": [],
        "conclusions": [],
        "open_asks": [],
        "candidates": [],
        "max_tool_calls": 8,
    },
    "verifier": {
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim": "order-service 存在 HighMemoryUsage 告警",
                "excerpts": [{"source": "query_alerts #1 $.alerts[0]", "text": "HighMemoryUsage firing"}],
                "facts_in_excerpts": ["HighMemoryUsage"],
                "facts_not_in_excerpts": ["order-service"],
                "polarity": "consistent",
            }
        ]
    },
    "cause": {
        "query": "order-service 为什么频繁 Full GC？",
        "candidates": [
            {
                "candidate": 1,
                "subject": "order-service",
                "mechanism": "HighMemoryUsage 告警触发",
                "before": "85%",
                "after": "91%",
            }
        ],
    },
    "composer": {
        "query": "只确认 order-service 是否存在 HighMemoryUsage 告警",
        "confirmed_findings": [],
        "reasonable_inferences": [],
        "gaps": [],
        "allowed_actions": [],
        "conclusions": [],
    },
}


def test_undefined_variable_is_an_error():
    variables = dict(PLANNER_VARIABLES)
    del variables["retry_context"]

    with pytest.raises(UndefinedError):
        prompt_render("planner", **variables)


@pytest.mark.parametrize("name", sorted(STAGE_VARIABLES))
def test_every_prompt_carries_its_version(name):
    rendered = prompt_render(name, **STAGE_VARIABLES[name])

    declared, digest = rendered.version.split("+")
    assert re.fullmatch(rf"{name}-v\d+", declared)
    assert len(digest) == 8  # a content hash: an edit without a version bump still changes it
    assert "version:" not in rendered.text  # the marker is a template comment, never sent to the model


@pytest.mark.parametrize("name", sorted(STAGE_VARIABLES))
def test_prompt_ends_with_exactly_its_stage_input_as_one_json_block(name):
    text = prompt_render(name, **STAGE_VARIABLES[name]).text

    assert text.rstrip().endswith("</input>")
    block = json.loads(text[text.rindex("<input>") + len("<input>") : text.rindex("</input>")])
    assert set(block) == set(STAGE_VARIABLES[name]) - {"max_tool_calls"}


def test_executor_prompt_carries_the_citation_rules_and_the_narrow_scope_gate_in_its_input():
    rendered = prompt_render("executor", **STAGE_VARIABLES["executor"])

    for rule in ("source_invocation_id", "raw_path", "evidence_excerpt", "$.no_evidence"):
        assert rule in rendered.system
    assert "窄范围问题（HARD-GATE）" in rendered.user
    assert "本轮最多还能调用 8 次工具" in rendered.user
    assert "补充取证轮" not in rendered.text


def test_the_narrow_scope_gate_is_rendered_only_for_a_narrow_plan():
    broad_plan = STAGE_VARIABLES["executor"]["plan"] | {"narrow_scope": False}

    text = prompt_render("executor", **STAGE_VARIABLES["executor"] | {"plan": broad_plan}).text

    assert "HARD-GATE" not in text and "窄范围" not in text


ANOTHER_QUESTION = {
    "planner": {"query": "web 为什么慢", "round": 2, "retry_context": {"missing_evidence_facts": ["x"]}},
    "executor": {
        "query": "web 为什么慢",
        "round": 2,
        "plan": {"goal": "查慢", "steps": [], "narrow_scope": False, "focus": ["web"], "excluded_topics": []},
        "retry_context": {"missing_evidence_facts": ["x"], "instruction": "仅补充"},
        "prior_tool_messages": [{"invocation_id": 3}],
        "conclusions": ["结论：web 的 p99 为 2.1s"],
        "open_asks": ["web 的原因"],
        "candidates": [
            {"subject": "web", "mechanism": "延迟升高", "onset": "10:05", "before": "1", "after": "2"}
        ],
        "max_tool_calls": 2,
    },
    "verifier": {"claims": []},
    "cause": {"query": "web 为什么慢", "candidates": []},
    "composer": STAGE_VARIABLES["composer"] | {"query": "web 为什么慢", "gaps": ["未检索到"]},
}


@pytest.mark.parametrize("name", sorted(STAGE_VARIABLES))
def test_a_stages_rules_are_the_same_for_every_question(name):
    # The system message is the prefix a server's prompt cache reuses across sessions and turns.
    one = prompt_render(name, **STAGE_VARIABLES[name])
    other = prompt_render(name, **ANOTHER_QUESTION[name])

    assert one.system == other.system
    assert one.user != other.user


@pytest.mark.parametrize("name", sorted(STAGE_VARIABLES))
def test_examples_carry_no_ids_or_names_a_model_could_copy(name):
    rules = prompt_render(name, **STAGE_VARIABLES[name]).system

    assert not re.search(r'"source_invocation_id":\s*\d', rules)
    assert not re.search(r"\b\d+:\$\.", rules)  # no "12:$.alerts[1]"-style evidence refs
    assert "-service" not in rules


def test_verifier_prompt_does_not_ask_for_what_code_computes():
    rules = prompt_render("verifier", **STAGE_VARIABLES["verifier"]).system

    assert "facts_checked" not in rules
    assert "groundedness_score" not in rules
    assert "user_facing_answer" not in rules


@pytest.mark.parametrize("name", sorted(STAGE_VARIABLES))
def test_rules_and_input_split_into_system_and_user(name):
    rendered = prompt_render(name, **STAGE_VARIABLES[name])

    assert "<input>" not in rendered.system and rendered.system
    assert "<input>" in rendered.user and rendered.user.endswith("</input>")


def test_retry_round_prompt_asks_only_for_the_missing_evidence():
    retry_context = {
        "round": 1,
        "missing_evidence_facts": ["order-service 内存使用率"],
        "instruction": "仅补充",
    }
    variables = STAGE_VARIABLES["executor"] | {"round": 2, "retry_context": retry_context}

    text = prompt_render("executor", **variables).text

    assert "补充取证轮（第 2 轮）" in text
    assert "order-service 内存使用率" in text


def test_the_cause_prompt_asks_for_candidate_numbers_not_copied_evidence():
    rendered = prompt_render("cause", **STAGE_VARIABLES["cause"])

    # Code cites for the model: it writes a number, never an invocation, a path or an excerpt.
    assert '"candidate": 1' in rendered.system
    for copied in ("source_invocation_id", "raw_path", "evidence_excerpt", "evidence_bindings"):
        assert copied not in rendered.text
