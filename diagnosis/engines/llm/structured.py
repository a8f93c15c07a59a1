"""Structured output modes: how a stage asks for its JSON and reads it back.

`DIAGNOSIS_LLM_STRUCTURED_OUTPUT` picks one profile; the engine only calls its methods:

- `json_schema` (default): `response_format` strict json_schema, named after the stage schema;
  the schema is the one the SDK's public `openai.pydantic_function_tool` builds in strict form.
- `json_object`: `response_format: {"type": "json_object"}` (DeepSeek-style endpoints); the schema
  goes into the instructions, since the endpoint does not enforce it.
- `prompted`: no `response_format` at all; the schema in the instructions, and the JSON read out of
  whatever surrounds it (code fences, a sentence before or after).

Every mode validates the reply with pydantic and re-asks once on failure, with the validation error.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import openai
from pydantic import BaseModel

STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object", "prompted")
SCHEMA_INSTRUCTION = (
    "\n\n## 输出格式\n\n只输出一个 JSON 对象，符合下面名为 {name} 的 JSON Schema（所有字段都必须给出）："
    "\n\n{schema}\n"
)


@dataclass(frozen=True)
class StageSchema:
    """What a stage asks the model for: the schema's name on the wire, the model that validates it, the
    reply's token cap, and the stage's prompt-token budget (all its calls in a round together;
    `manage.py bench` reports each stage against it, and the executor's tool turns stop before
    passing it)."""

    name: str
    model: type[BaseModel]
    max_completion_tokens: int
    prompt_tokens: int


class JsonSchemaOutput:
    name = "json_schema"

    def request(self, schema: StageSchema) -> dict[str, Any]:
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.name,
                    "schema": for_model(strict_json_schema(schema)),
                    "strict": True,
                },
            }
        }

    def instructions(self, schema: StageSchema) -> str:
        return ""


class JsonObjectOutput:
    name = "json_object"

    def request(self, schema: StageSchema) -> dict[str, Any]:
        return {"response_format": {"type": "json_object"}}

    def instructions(self, schema: StageSchema) -> str:
        return _schema_instruction(schema)


class PromptedOutput:
    name = "prompted"

    def request(self, schema: StageSchema) -> dict[str, Any]:
        return {}

    def instructions(self, schema: StageSchema) -> str:
        return _schema_instruction(schema)


StructuredOutput = JsonSchemaOutput | JsonObjectOutput | PromptedOutput
_PROFILES: dict[str, type[StructuredOutput]] = {
    "json_schema": JsonSchemaOutput,
    "json_object": JsonObjectOutput,
    "prompted": PromptedOutput,
}


def structured_output_profile(mode: str) -> StructuredOutput:
    try:
        return _PROFILES[mode]()
    except KeyError:
        raise ValueError(
            f"DIAGNOSIS_LLM_STRUCTURED_OUTPUT={mode!r}; expected one of {', '.join(STRUCTURED_OUTPUT_MODES)}"
        ) from None


@functools.cache
def strict_json_schema(schema: StageSchema) -> dict[str, Any]:
    """OpenAI strict form (every object closed, every property required), by the SDK's public helper."""
    return openai.pydantic_function_tool(schema.model, name=schema.name)["function"]["parameters"]


@functools.cache
def _schema_instruction(schema: StageSchema) -> str:
    compact = json.dumps(for_model(strict_json_schema(schema)), ensure_ascii=False, separators=(",", ":"))
    return SCHEMA_INSTRUCTION.format(name=schema.name, schema=compact)


def for_model(node: Any) -> Any:
    """A JSON schema (or tool definition) without what a model does not need: titles only repeat the
    property names, and an object's description is its class docstring, written for developers.
    A small model's context is better spent elsewhere; field descriptions stay."""
    if isinstance(node, list):
        return [for_model(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: (
            {name: for_model(sub) for name, sub in value.items()}
            if key in ("properties", "$defs")
            else for_model(value)
        )
        for key, value in node.items()
        if key != "title" and not (key == "description" and "properties" in node)
    }


def json_objects_in(text: str) -> list[Any]:
    """Every top-level JSON object in `text`, in order, whatever surrounds them (fences, prose)."""
    decoder = json.JSONDecoder()
    found, index = [], text.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index = text.find("{", index + 1)
            continue
        found.append(value)
        index = text.find("{", end)
    return found


def json_text_of(text: str) -> str:
    """The reply's JSON: the text itself when it parses, else the first object found inside it."""
    stripped = text.strip()
    try:
        json.loads(stripped)
    except json.JSONDecodeError:
        objects = [value for value in json_objects_in(stripped) if isinstance(value, dict)]
        return json.dumps(objects[0], ensure_ascii=False) if objects else stripped
    return stripped
