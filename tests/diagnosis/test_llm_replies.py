"""Reading replies: reasoning removed, JSON and prompted tool calls found, stored text bounded."""

import json

import pytest

from diagnosis.engines.llm.replies import (
    ModelReply,
    bounded_replies,
    bounded_text,
    restated,
    without_reasoning,
)
from diagnosis.engines.llm.structured import json_text_of
from diagnosis.engines.llm.tool_calls import PromptedToolCalls


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('<think>想一想</think>{"a": 1}', '{"a": 1}'),
        ('<THINK>\n多行\n推理\n</THINK>\n\n{"a": 1}', '{"a": 1}'),
        ('推理只有结尾标签</think>{"a": 1}', '{"a": 1}'),
        ("<think>没写完的推理", ""),
        ('{"a": "<b>"}', '{"a": "<b>"}'),
    ],
)
def test_reasoning_is_removed(text, expected):
    stripped, removed = without_reasoning(text)

    assert stripped == expected
    assert removed == len(text.strip()) - len(expected)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', '```json\n{"a": 1}\n```', '结果如下：{"a": 1}。', '{"a": 1}\n{"b": 2}'],
)
def test_the_first_json_object_is_read_out_of_its_wrapping(text):
    assert json.loads(json_text_of(text)) == {"a": 1}


def test_prompted_tool_calls_in_blocks_or_one_object_are_parsed():
    profile = PromptedToolCalls()
    blocks = ModelReply(
        content='<tool_call>{"name": "query_logs", "arguments": {"query": "GC"}}</tool_call>\n'
        '<tool_call>{"name": "query_alerts", "arguments": {}}</tool_call>',
        finish_reason="stop",
    )
    one_object = ModelReply(
        content='{"tool_calls": [{"name": "lookup_knowledge", "arguments": {"query": "队列"}}]}',
        finish_reason="stop",
    )
    broken = ModelReply(content='<tool_call>{"name": "query_logs", "argum', finish_reason="length")
    fenced_call = ModelReply(
        content='```json\n{"name": "query_alerts", "arguments": {"service": "checkout"}}\n```\n\n\n',
        finish_reason="length",
    )

    assert [(c.name, json.loads(c.arguments)) for c in profile.calls(blocks)] == [
        ("query_logs", {"query": "GC"}),
        ("query_alerts", {}),
    ]
    assert [c.name for c in profile.calls(one_object)] == ["lookup_knowledge"]
    assert profile.calls(broken) == []
    assert [(c.name, json.loads(c.arguments)) for c in profile.calls(fenced_call)] == [
        ("query_alerts", {"service": "checkout"})
    ]
    assert profile.calls(ModelReply(content='{"goal": "x"}', finish_reason="stop")) == []


def test_a_written_call_copying_the_example_placeholder_or_a_quoted_null_leaves_that_argument_out():
    profile = PromptedToolCalls()
    copied = ModelReply(
        content='<tool_call>{"name": "query_alerts", "arguments": {"service": "billing", "alert_name": "…"}}'
        '</tool_call><tool_call>{"name": "query_logs", "arguments": {"query": "GC", "service": "null"}}</tool_call>',
        finish_reason="stop",
    )

    assert [(c.name, json.loads(c.arguments)) for c in profile.calls(copied)] == [
        ("query_alerts", {"service": "billing"}),
        ("query_logs", {"query": "GC"}),
    ]


def test_stored_replies_stay_within_the_step_bound_with_a_note():
    replies = [
        {"content": "界" * 100_000, "finish_reason": "stop"},
        {"content": "短", "finish_reason": "stop"},
    ]

    stored = bounded_replies(replies, limit_bytes=64 * 1024)

    assert len(json.dumps(stored, ensure_ascii=False).encode()) <= 64 * 1024
    assert "已截断：原文 300000 字节" in stored[0]["content"]
    assert stored[1]["content"] == "短"
    assert bounded_text("abc", 10) == "abc"


# The old verifier prompt's definition of external_unknown, as a 1.5B model wrote it for every claim.
OLD_RULE = "- `external_unknown`：断言引入了证据中不存在的新实体、新数值、新错误码、新接口或新结论。"


@pytest.mark.parametrize(
    ("reason", "copied"),
    [
        ("断言引入了证据中不存在的新实体…", "断言引入了证据中不存"),
        ("断言引入了证据中\n不存在的新实体", "断言引入了证据中不存"),  # spaces and line breaks aside
        ("摘录写明 disk-api 的磁盘使用率 93%", ""),
        # Quoting the input is what a reason should do, even where the instructions say the same.
        ("断言引入了证据中不存在的新实体 disk-api", ""),
    ],
)
def test_a_reason_copied_from_the_instructions_is_found(reason, copied):
    own = (
        ["断言引入了证据中不存在的新实体 disk-api"] if reason.endswith("disk-api") else ["disk-api 磁盘 93%"]
    )

    assert restated(reason, OLD_RULE, own=own) == copied
