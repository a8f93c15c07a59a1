"""One rule for what the product accepts from outside, on the chat form, the JSON API and the
Alertmanager webhook alike (issue 14):

- no NUL character anywhere: in the path (404, no such page can exist), the query string, headers,
  form fields and JSON strings (400); PostgreSQL text cannot hold one, so it used to end as a 500. The
  webhook's JSON is the one exception: its strings are Alertmanager's labels, data that a NUL must not
  lose, and it replaces them (issue 38);
- JSON at most `MAX_JSON_DEPTH` levels deep (400; a thousand levels used to overflow the parser's
  recursion: a 500);
- bodies at most `DATA_UPLOAD_MAX_MEMORY_SIZE` bytes: Django enforces it for forms and DRF (400).

Field lengths (the question's 2,000 characters, session ids) stay with the fields that have them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

NUL = "\x00"
# Alertmanager's payload, the deepest we take, nests 4 levels; 32 leaves room and stays far from recursion.
MAX_JSON_DEPTH = 32
NUL_MESSAGE = "提交的内容包含不允许的 NUL 字符（\\u0000），请删除后重试。"
# What browsers post; DRF reuses what Django parsed, so reading it here costs no second parse.
FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class InputRejected(ValueError):
    pass


def structure_problem(
    value: Any, *, max_depth: int = MAX_JSON_DEPTH, nul_allowed: bool = False
) -> str | None:
    """What breaks the rule in a decoded JSON value (any string or key with NUL unless `nul_allowed`,
    too deep), or None."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if NUL in item and not nul_allowed:
                return NUL_MESSAGE
        elif isinstance(item, dict | list):
            if depth > max_depth:
                return f"JSON 嵌套超过 {max_depth} 层。"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} 不是合法的 JSON 数值")


def json_loads_bounded(data: bytes, *, nul_allowed: bool = False) -> Any:
    """`data` decoded as JSON under the rule (NUL taken as it is when `nul_allowed`: a caller that
    replaces it); `InputRejected` says why not."""
    try:
        value = json.loads(data, parse_constant=_reject_constant)
    except RecursionError as error:
        raise InputRejected(f"JSON 嵌套超过 {MAX_JSON_DEPTH} 层。") from error
    except ValueError as error:
        raise InputRejected(f"JSON 格式错误：{error}") from error
    problem = structure_problem(value, nul_allowed=nul_allowed)
    if problem:
        raise InputRejected(problem)
    return value


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser under the rule."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return json_loads_bounded(stream.read())
        except InputRejected as error:
            raise ParseError(str(error)) from error


def request_problem(request: HttpRequest) -> tuple[int, str] | None:
    """(status, message) when the request's path, query, headers or form fields hold a NUL."""
    if NUL in request.path:
        return 404, "页面不存在。"
    query_values = [item for key, values in request.GET.lists() for item in (key, *values)]
    headers = [value for name, value in request.META.items() if name.startswith("HTTP_")]
    form_values = []
    if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
        form_values = [item for key, values in request.POST.lists() for item in (key, *values)]
    if any(NUL in str(value) for value in (*query_values, *headers, *form_values)):
        return 400, NUL_MESSAGE
    return None


class RejectNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = request_problem(request)
        if problem is None:
            return self.get_response(request)
        status, message = problem
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": message}, status=status)
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
