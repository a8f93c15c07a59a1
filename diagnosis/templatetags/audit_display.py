"""Filters that let admin templates lay out any JSON value (dicts, tables, lists) instead of a raw blob."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def json_kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if value is None or (isinstance(value, str | dict | list | tuple) and not value):
        return "empty"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return "table"
    if isinstance(value, list | tuple):
        return "list"
    return "scalar"


@register.filter
def entries(value: dict) -> list[tuple]:
    """A dict's items; `value.items` in a template would look up a key named "items" first."""
    return list(value.items())


@register.filter
def table_columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


@register.filter
def cell(row: dict, key: str):
    return row.get(key)
