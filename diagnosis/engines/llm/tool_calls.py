"""How the executor's tool calls travel (`DIAGNOSIS_LLM_TOOL_CALLS`):

- `native` (default): strict function tools in `tools`, `tool_calls` in the reply, results as
  `role: tool` messages.
- `prompted`: for servers and small models that do not emit native calls. The tools are described
  in the instructions; the model writes each call as `<tool_call>{"name": ..., "arguments": {...}}
  </tool_call>` (the format Qwen-style chat templates use) or a `{"tool_calls": [...]}` object, code
  parses it, and results go back as `<tool_result>` blocks in user messages.

Tool turns never carry a `response_format` (on llama.cpp it would force the schema's grammar and no
tool call could ever be written); the final answer is asked for in a separate turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from diagnosis.engines.llm.replies import ModelReply
from diagnosis.engines.llm.structured import json_objects_in

TOOL_CALL_MODES = ("native", "prompted")
TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(?P<json>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
# The example value in the written call format, and what counts as no value in a written call.
PLACEHOLDER = "…"
NO_VALUE = (PLACEHOLDER, "...", "null", "None")
PROMPTED_INSTRUCTION = """

## 调用工具的方式

可用工具：

{tools}

需要调用工具时，回复中只写工具调用，每个调用一行，格式如下（可以一次写多个）：

<tool_call>{{"name": "工具名", "arguments": {{参数}}}}</tool_call>

工具结果会以 <tool_result>…</tool_result> 的形式返回给你。取证完成后不要再写 <tool_call>。
"""
# A parameter as the prompted instructions describe it: name, whether it is required, type or values.
REQUIRED, OPTIONAL = "必填", "可选"


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text as the model wrote it


class NativeToolCalls:
    name = "native"

    def instructions(self, tools: list[dict]) -> str:
        return ""

    def tool_turn_request(self, tools: list[dict], *, required: bool) -> dict[str, Any]:
        return {"tools": tools, "tool_choice": "required" if required else "auto"}

    def call_format(self, tool: dict) -> str:
        return ""  # the endpoint's own tool-call format

    def final_turn_request(self, tools: list[dict]) -> dict[str, Any]:
        return {"tools": tools, "tool_choice": "none"}

    def calls(self, reply: ModelReply) -> list[ToolCall]:
        if reply.tool_calls:
            return [
                ToolCall(id=call.id, name=call.name, arguments=call.arguments) for call in reply.tool_calls
            ]
        # Offered native tools, a small model may still write its call in the text, fenced (measured:
        # Qwen2.5-Coder 1.5B on llama.cpp's server): read as the prompted mode reads it.
        return written_calls(reply.content)

    def assistant_message(self, reply: ModelReply, calls: list[ToolCall]) -> dict[str, Any]:
        return {
            "role": "assistant",
            # Calls written in the text go back as the native calls they were read as, not twice.
            "content": (reply.content or None) if reply.tool_calls else None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ],
        }

    def result_message(self, call: ToolCall, result: dict) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result, ensure_ascii=False)}


class PromptedToolCalls:
    name = "prompted"

    def instructions(self, tools: list[dict]) -> str:
        return PROMPTED_INSTRUCTION.format(tools="\n".join(_tool_line(tool) for tool in tools))

    def tool_turn_request(self, tools: list[dict], *, required: bool) -> dict[str, Any]:
        return {}  # nothing to force with: the instructions ask for the calls

    def call_format(self, tool: dict) -> str:
        """The written format, with `tool`'s name and parameter names as the example."""
        function = tool["function"]
        example = {name: PLACEHOLDER for name in function.get("parameters", {}).get("properties", {})}
        call = json.dumps({"name": function["name"], "arguments": example}, ensure_ascii=False)
        # Without the last sentence a 1.5B model sent "…" itself as an alert name.
        return f"格式：<tool_call>{call}</tool_call>。“…”换成问题和计划中的实际值；不知道的参数不要写。"

    def final_turn_request(self, tools: list[dict]) -> dict[str, Any]:
        return {}

    def calls(self, reply: ModelReply) -> list[ToolCall]:
        return written_calls(reply.content)

    def assistant_message(self, reply: ModelReply, calls: list[ToolCall]) -> dict[str, Any]:
        return {"role": "assistant", "content": reply.content}

    def result_message(self, call: ToolCall, result: dict) -> dict[str, Any]:
        body = json.dumps(result, ensure_ascii=False)
        return {"role": "user", "content": f"<tool_result>\n{body}\n</tool_result>"}


def _tool_line(tool: dict) -> str:
    """One tool in a line of text, not its JSON Schema (a third of the tokens): `- name：description
    参数：service（可选，string）服务名…；limit（可选，integer，1–100）条数`."""
    function = tool["function"]
    parameters = function.get("parameters", {})
    required = set(parameters.get("required", []))
    described = []
    for name, schema in parameters.get("properties", {}).items():
        kinds = [option for option in schema.get("anyOf", [schema]) if option.get("type") != "null"]
        nullable = len(kinds) < len(schema.get("anyOf", [schema]))
        kind = kinds[0] if kinds else {}
        shape = " / ".join(kind["enum"]) if kind.get("enum") else kind.get("type", "string")
        if "minimum" in kind and "maximum" in kind:
            shape += f"，{kind['minimum']}–{kind['maximum']}"
        needed = REQUIRED if name in required and not nullable and "default" not in schema else OPTIONAL
        described.append(f"{name}（{needed}，{shape}）{schema.get('description', '')}")
    line = f"- {function['name']}：{function.get('description', '')}"
    return line + ("\n  参数：" + "；".join(described) if described else "")


def written_calls(text: str) -> list[ToolCall]:
    """The calls written in a reply's text: `<tool_call>` blocks, else a `{"tool_calls": [...]}` object or
    calls written alone."""
    written = [match["json"] for match in TOOL_CALL_BLOCK.finditer(text)]
    candidates: list[Any] = []
    for block in written:
        candidates += json_objects_in(block)  # a block cut off mid-call holds no object: skipped
    if not written:
        for value in json_objects_in(text):
            if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
                candidates += value["tool_calls"]
            elif isinstance(value, dict) and "arguments" in value:
                # A call written alone, `{"name": …, "arguments": …}`, often fenced: what small
                # instruct models (Qwen2.5-Coder 1.5B on llama.cpp) write when asked to call a tool.
                candidates.append(value)
    calls = []
    for index, value in enumerate(candidates):
        if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
            continue
        arguments = value.get("arguments", {})
        if isinstance(arguments, dict):
            # Copied from the format's example, or null written as a string (both seen on a 1.5B
            # model): no value, as if the argument were left out.
            arguments = {key: item for key, item in arguments.items() if item not in NO_VALUE}
        written_arguments = (
            arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        )
        calls.append(ToolCall(id=f"call_{index}", name=value["name"], arguments=written_arguments))
    return calls


ToolCalling = NativeToolCalls | PromptedToolCalls


def tool_calling_profile(mode: str) -> ToolCalling:
    if mode == "native":
        return NativeToolCalls()
    if mode == "prompted":
        return PromptedToolCalls()
    raise ValueError(f"DIAGNOSIS_LLM_TOOL_CALLS={mode!r}; expected one of {', '.join(TOOL_CALL_MODES)}")
