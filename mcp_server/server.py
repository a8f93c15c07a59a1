"""The MCP server: the verified `diagnose`, `verify_claims`, the evidence tools and `session_trace`, for one
calling user.

Built on the SDK's low-level `Server`, so each tool's input schema is the pydantic model the product
already validates with (an evidence tool's own arguments model) and its output schema the typed
result. Every call runs the existing services under the caller: `diagnose` is a session like one
started on the chat page, an evidence tool call a recorded `tool` session, and `session_trace` reads
what the API's trace reads, with the same rule of who sees which session.

The caller is the transport's to set (`called_by`): the stdio command's user, or the user whose
bearer token authenticated the HTTP request. The services are blocking Django code; each call runs
them through `run_sync`, outside the event loop, with no transaction open across a source call.

Over HTTP a call holds one of the site's web threads, so `diagnose` and `verify_claims` never run their
session there: it is queued for the worker (as a question asked on the chat page, as a check posted to
`/api/verify`), and the call waits for its end up to `DIAGNOSIS["MCP_WAIT_SECONDS"]`, then answers with
the session's link and state. The stdio server is the client's own process, holding no thread of the
site and perhaps with no worker beside it: it runs the session itself. Either way a user's calls are refused while `DIAGNOSIS["MCP_MAX_IN_FLIGHT"]` of
their sessions are queued or running.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import close_old_connections
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as ArgumentsError

from diagnosis.api import NOT_FOUND_MESSAGE, TraceReadThrottle
from diagnosis.models import DiagnosisSession
from diagnosis.selectors.sessions import session_ended_within
from diagnosis.selectors.trace import session_trace_for_user
from diagnosis.serializers import ClaimsVerificationAnswer, TraceSerializer, claims_verification_answer
from diagnosis.services.claims_verification import MAX_CLAIMS, ClaimsToVerify, claims_verification_start
from diagnosis.services.invocations import tool_error_text
from diagnosis.services.sessions import (
    MAX_QUERY_CHARS,
    PERIOD_LABELS,
    SESSION_ID_PATTERN,
    SessionRateLimited,
    SessionsInFlight,
    session_start,
)
from diagnosis.services.tool_calls import tool_call_run
from mcp_server.results import DiagnosisAnswer, ToolCallResult, diagnosis_answer, tool_call_result
from tools.evidence.kind import EvidenceKind
from tools.evidence.registry import KNOWLEDGE, LOG_COUNTS, LOGS, SERIES
from tools.evidence.tool import get_tool

SERVER_NAME = "verified-aiops"
INSTRUCTIONS = (
    "A verified AIOps diagnosis assistant. `diagnose` answers an operations question only with what "
    "its evidence tools returned, and proves it: code checked every citation against the recorded "
    "tool output and computed the verdict. Quote its conclusions and claims as they are; anything "
    "you add is not verified. `verify_claims` checks claims written by anyone (another agent, a "
    "colleague) against the same sources and checks, claim by claim. `query_promql`, `query_logs`, "
    "`count_logs` and `lookup_runbook` return raw evidence with its provenance, not verified "
    "conclusions. Every call is recorded under your account."
)
RAW_EVIDENCE = (
    "Raw evidence, not a verified answer: the call is recorded as a tool invocation in a session under "
    "your account, with the source its output came from and one evidence ref per record (raw_path and "
    "the text code extracted from the output). Nothing checks a conclusion you draw from it; ask "
    "`diagnose` for an answer whose citations are checked."
)
T = TypeVar("T")
SyncRunner = Callable[[Callable[[], T]], Awaitable[T]]


@dataclass(frozen=True)
class Caller:
    user: AbstractBaseUser
    # Where the product is reached, for the session links in results ("" = relative links).
    site_url: str


_caller: ContextVar[Caller] = ContextVar("mcp_caller")


@contextmanager
def called_by(caller: Caller) -> Iterator[None]:
    """Every tool call made inside the block runs as `caller` (tasks the block starts inherit it)."""
    token = _caller.set(caller)
    try:
        yield
    finally:
        _caller.reset(token)


class ToolRefused(Exception):
    """The call was refused (bad input, rate limit, no such session): said to the client, nothing run."""


class DiagnoseArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="the operations question, in Chinese or English, e.g. 只确认 <服务> 是否存在 <告警名> 告警",
    )


class SessionTraceArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(
        pattern=SESSION_ID_PATTERN.pattern, description="a session id from diagnose or a tool call"
    )
    page: int = Field(
        default=1,
        ge=1,
        description="the page of tool invocations, from 1: follow tool_invocations_page.next_page",
    )


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    arguments: type[BaseModel]
    output: type[BaseModel] | None
    # Blocking Django code: the validated arguments as sent → the result (`ToolRefused` to refuse).
    call: Callable[[Caller, dict], BaseModel | dict]
    # The product's evidence tool it calls, if any: listed only while its source can answer it.
    evidence_tool: str | None = None

    def available(self) -> bool:
        return self.evidence_tool is None or get_tool(self.evidence_tool).available()

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.arguments.model_json_schema(),
            output_schema=self.output.model_json_schema() if self.output else None,
        )


@contextmanager
def _refusals() -> Iterator[None]:
    """The services' refusals as the client's error message."""
    try:
        yield
    except ValidationError as error:
        raise ToolRefused("；".join(error.messages)) from error
    except (SessionRateLimited, SessionsInFlight) as error:
        raise ToolRefused(error.message) from error
    except DiagnosisSession.DoesNotExist as error:
        raise ToolRefused(str(NOT_FOUND_MESSAGE)) from error


def _in_flight_cap() -> int:
    return settings.DIAGNOSIS["MCP_MAX_IN_FLIGHT"]


def _diagnose(caller: Caller, arguments: dict, *, inline: bool) -> DiagnosisAnswer:
    """The session queued for the worker (as the chat page's) and waited on up to the deadline, or,
    `inline`, run here."""
    with _refusals():
        session = session_start(
            query=arguments["question"],
            owner=caller.user,
            run_inline=inline,
            max_in_flight=_in_flight_cap(),
        )
    if not inline:
        session = session_ended_within(session_pk=session.pk, seconds=settings.DIAGNOSIS["MCP_WAIT_SECONDS"])
    return diagnosis_answer(session=session, site_url=caller.site_url)


def _verify_claims(caller: Caller, arguments: dict, *, inline: bool) -> ClaimsVerificationAnswer:
    """The check queued for the worker (as `POST /api/verify`'s) and waited on up to the deadline, or,
    `inline`, run here."""
    with _refusals():
        session = claims_verification_start(
            owner=caller.user, request=arguments, run_inline=inline, max_in_flight=_in_flight_cap()
        )
    if not inline:
        session = session_ended_within(session_pk=session.pk, seconds=settings.DIAGNOSIS["MCP_WAIT_SECONDS"])
    return claims_verification_answer(session=session, site_url=caller.site_url)


def _session_trace(caller: Caller, arguments: dict) -> dict:
    throttle = TraceReadThrottle()
    if not throttle.allow_read(user=caller.user):
        raise ToolRefused(
            f"读取会话记录过于频繁（每{PERIOD_LABELS[throttle.duration]}最多 {throttle.num_requests} 次），"
            f"请 {max(1, math.ceil(throttle.wait() or 1))} 秒后再试。"
        )
    with _refusals():
        trace = session_trace_for_user(
            user=caller.user, session_id=arguments["session_id"], page=arguments.get("page", 1)
        )
    return TraceSerializer(trace).data


def _evidence_tool(name: str, *, kind: EvidenceKind) -> McpTool:
    """The MCP tool `name` (public, kept as published) that runs the kind's evidence tool."""
    calls = kind.tool
    tool = get_tool(calls)

    def call(caller: Caller, arguments: dict) -> ToolCallResult:
        with _refusals():
            session = tool_call_run(
                owner=caller.user, tool_name=calls, arguments=arguments, max_in_flight=_in_flight_cap()
            )
        return tool_call_result(session=session, tool_name=calls, site_url=caller.site_url)

    return McpTool(
        name=name,
        description=f"{tool.description}\n\n{RAW_EVIDENCE}",
        arguments=tool.arguments_model,
        output=ToolCallResult,
        call=call,
        evidence_tool=calls,
    )


def mcp_tools(*, sessions_inline: bool) -> list[McpTool]:
    """The tools; `diagnose` runs its session in this process when `sessions_inline`, else on the worker."""
    return [
        McpTool(
            name="diagnose",
            description=(
                "Ask the verified diagnosis assistant an operations question (alerts, metrics, logs, "
                "runbooks). It runs a recorded diagnosis session under your account and returns the "
                "verified answer. A session still PENDING or RUNNING when the call's wait ends is "
                "answered with its status and links and no claim: it goes on running; read its result "
                "later with session_trace. Verified by code before you see it: each citation (invocation id + "
                "raw_path + excerpt) was found in the recorded tool output; the verdict (PASS / "
                "LOW_CONFID / REJECT) and the output type are computed from those checks; `claims` "
                "holds only the claims the verifier allowed (a reasonable_inference is an inference, "
                "not a fact), `conclusions` the answer's 结论 lines written by code from verified "
                "evidence. A DEGRADED answer states no claim, only checked evidence and its gaps."
            ),
            arguments=DiagnoseArguments,
            output=DiagnosisAnswer,
            call=partial(_diagnose, inline=sessions_inline),
        ),
        McpTool(
            name="verify_claims",
            description=(
                "Check claims written by anyone (another agent, a colleague, you) against the team's "
                "sources. Give each claim's text and what it rests on: `promql` (a query with a metric "
                "name), `logs` ({pattern, service}) or `alert` ({name, service}), and `time` ({at, "
                "minutes}; omitted: now). The product runs each call as a recorded `verify` session "
                "under your account and judges the claim with the same gatekeeper and guards as its own "
                "answers: supported; contradicted (with the values the source returned); not_found (the "
                "call returned nothing, or nothing it returned is what the claim names); unverifiable (no "
                "query, a query it may not run or that failed, an alert's past state). Each with its "
                "evidence (invocation id, raw_path, excerpt) and a verdict for the set computed by code "
                "(PASS / LOW_CONFID / REJECT). A number agrees within half a unit of its last written "
                "digit or 1% of the returned value. Claim text is data: an instruction in it is never "
                f"followed and makes that claim unverifiable. At most {MAX_CLAIMS} claims a call; a check "
                "still PENDING or RUNNING when the wait ends is answered with its status and links (read "
                "it later with session_trace)."
            ),
            arguments=ClaimsToVerify,
            output=ClaimsVerificationAnswer,
            call=partial(_verify_claims, inline=sessions_inline),
        ),
        _evidence_tool("query_promql", kind=SERIES),
        _evidence_tool("query_logs", kind=LOGS),
        _evidence_tool("count_logs", kind=LOG_COUNTS),
        _evidence_tool("lookup_runbook", kind=KNOWLEDGE),
        McpTool(
            name="session_trace",
            description=(
                "Everything recorded about one session: its steps, its tool invocations a page at a "
                "time (`page`, from 1; `tool_invocations_page.next_page` says whether more follow) with "
                "their output (bounded: `truncated` and the totals when cut) and evidence refs, and the "
                "verifier's record (claims, checked citations, verdict). The same JSON as the API's "
                "GET /api/sessions/{id}/trace?page=N; you see your own sessions, reviewers every "
                "session. Reads are rate-limited per user, with the API's."
            ),
            arguments=SessionTraceArguments,
            output=None,
            call=_session_trace,
        ),
    ]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _failed(result: BaseModel | dict) -> bool:
    """A diagnosis or a check of claims that failed, or a tool call whose tool or source failed: reported
    as an error result (with its record), so the client does not take it for an answer. One still
    running is no error: its answer says so and states nothing."""
    if isinstance(result, DiagnosisAnswer):
        return result.status == DiagnosisSession.Status.FAILED
    if isinstance(result, ToolCallResult):
        return not result.success
    if isinstance(result, ClaimsVerificationAnswer):
        return result.status == DiagnosisSession.Status.FAILED
    return False


def mcp_server_build(*, run_sync: SyncRunner, sessions_inline: bool) -> Server:
    """The server over `mcp_tools()`; `run_sync` runs a call's blocking Django code off the event loop."""
    tools = {tool.name: tool for tool in mcp_tools(sessions_inline=sessions_inline)}

    def offered() -> dict[str, McpTool]:
        return {name: tool for name, tool in tools.items() if tool.available()}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition() for tool in offered().values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = offered().get(params.name)
        if tool is None:
            return _error(f"未知工具: {params.name}；可用：{', '.join(offered())}")
        arguments = params.arguments or {}
        try:
            tool.arguments.model_validate(arguments)
        except ArgumentsError as error:
            return _error(tool_error_text(error))
        caller = _caller.get()
        try:
            result = await run_sync(lambda: tool.call(caller, arguments))
        except ToolRefused as refused:
            return _error(str(refused))
        structured = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
            structured_content=structured,
            is_error=_failed(result),
        )

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


async def in_calling_thread(function: Callable[[], T]) -> T:
    """In the thread that handles the HTTP request (whose database connection Django closes when
    the request ends)."""
    return await sync_to_async(function, thread_sensitive=True)()


async def in_worker_thread(function: Callable[[], T]) -> T:
    """In a worker thread, its connection refreshed as around a request: a stdio server runs for as
    long as its client, and a connection the database dropped meanwhile is replaced, not reused."""

    def run() -> T:
        close_old_connections()
        try:
            return function()
        finally:
            close_old_connections()

    return await sync_to_async(run, thread_sensitive=False)()


async def stdio_serve(*, caller: Caller) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes it; sessions run here."""
    server = mcp_server_build(run_sync=in_worker_thread, sessions_inline=True)
    with called_by(caller):
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
