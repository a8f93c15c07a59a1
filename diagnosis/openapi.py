"""Pydantic models in the OpenAPI schema (the claims check's request and answer, `extend_schema`).

drf-spectacular lets pydantic write their JSON Schema, which says an optional field as
`anyOf: [X, {"type": "null"}]` (JSON Schema, OpenAPI 3.1); the API's schema is OpenAPI 3.0, which says
it as `X` with `nullable: true`. This extension, preferred over drf-spectacular's own, writes that.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.contrib.pydantic import PydanticExtension
from drf_spectacular.plumbing import ResolvedComponent
from pydantic.json_schema import model_json_schema

NULL = {"type": "null"}


class Oas30PydanticExtension(PydanticExtension):
    priority = 1

    def map_serializer(self, auto_schema, direction):
        """As drf-spectacular's own: the model's schema, its sub-models as components; nullable as 3.0 says."""
        schema = nullable_written(
            model_json_schema(self.target, ref_template="#/components/schemas/{model}", mode="serialization")
        )
        for name, sub_schema in schema.pop("$defs", {}).items():
            auto_schema.registry.register_on_missing(
                ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, object=name, schema=sub_schema)
            )
        return schema


def nullable_written(schema: Any) -> Any:
    """The schema with each `anyOf` of one type and null written as that type, nullable."""
    if isinstance(schema, list):
        return [nullable_written(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: nullable_written(value) for key, value in schema.items()}
    alternatives = schema.get("anyOf")
    if isinstance(alternatives, list) and NULL in alternatives and len(alternatives) == 2:
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        [other] = [alternative for alternative in alternatives if alternative != NULL]
        written = {"allOf": [other]} if "$ref" in other else dict(other)
        return {**written, **rest, "nullable": True}
    return schema
