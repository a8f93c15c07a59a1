"""OpenTelemetry traces of sessions, sent by OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; nothing at all otherwise.

One trace per session, its spans named and attributed after the OpenTelemetry GenAI conventions:

    invoke_agent diagnosis              the session: its id, kind, engine; then status, verdict, output type
      stage planner … stage composer    one per stage and round (the recorder's stage_started → step_recorded)
        chat {model}                    one per model call (the llm engine): tokens, finish reasons
        execute_tool {tool}             one per recorded tool call: its invocation id, source, evidence

Prompts, replies, the question, the answer, tool arguments, results and error text are recorded only
when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; otherwise a failure is named by its class
alone. Each hook sits at a seam: `session_traced` (every kind of session), `stages_traced` (a `Recorder`
wrapper: the pipeline never knows), `chat_traced` (the llm engine's model call), `tool_calls_traced` (the
recorded calls), `in_this_trace` (work handed to a thread) and `flush` (a worker after each task: its
process ends without running exit handlers).
The SDK is imported only when tracing is on; the provider is this module's own, not the global one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from diagnosis.pipeline.interfaces import Recorder, Stage, StepRecord, StepStatus, Toolbox
from diagnosis.pipeline.records import RoundRecord
from tools.evidence.result import ToolResult

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

P = ParamSpec("P")
R = TypeVar("R")

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
DEFAULT_SERVICE_NAME = "aiops-diagnosis"
AGENT_NAME = "diagnosis"
# The OpenAI chat completions API, whichever server speaks it.
PROVIDER_NAME = "openai"
FLUSH_TIMEOUT_MS = 10_000
ERROR_TEXT_CHARS = 300
SESSION_ID = otel_context.create_key("diagnosis.session_id")

_provider_lock = threading.Lock()
_provider: tuple[tuple[tuple[str, str], ...], TracerProvider] | None = None


def enabled() -> bool:
    return _tracer() is not None


def capturing_content() -> bool:
    return os.environ.get(CAPTURE_CONTENT, "").strip().lower() == "true"


def flush() -> None:
    """Export every span ended so far: a worker process ends without exit handlers. An unreachable
    collector holds it up to the exporter's timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s)."""
    current = _provider
    if current is not None:
        current[1].force_flush(FLUSH_TIMEOUT_MS)


def _tracer() -> trace.Tracer | None:
    global _provider
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if not any(os.environ.get(name) for name in ENDPOINT_VARIABLES):
        return None
    # The SDK reads its OTEL_* variables when the provider is built: a change builds a new one.
    configuration = tuple(
        sorted(
            (name, value)
            for name, value in os.environ.items()
            if name.startswith("OTEL_") and name != CAPTURE_CONTENT
        )
    )
    with _provider_lock:
        if _provider is None or _provider[0] != configuration:
            if _provider is not None:
                _provider[1].shutdown()
            _provider = (configuration, _provider_build())
        return _provider[1].get_tracer(__name__)


def _provider_build() -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    # Flushed by its exit handler when the process ends normally (a management command).
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    # The exporter reads the endpoint, headers, timeout and compression from the OTEL_* variables.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _session_attributes() -> dict[str, str]:
    """Every span of a session names it: the conventions' conversation id, and `session.id` (Langfuse,
    Phoenix group by it)."""
    session_id = otel_context.get_value(SESSION_ID)
    return {"gen_ai.conversation.id": session_id, "session.id": session_id} if session_id else {}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _failed(span: Span, error_type: str, description: str = "") -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR, description[:ERROR_TEXT_CHARS] or None)


def in_this_trace(function: Callable[P, R]) -> Callable[P, R]:
    """`function`, run under the caller's trace context wherever it runs (a pool thread): its spans nest."""
    if not enabled():
        return function
    parent = otel_context.get_current()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        token = otel_context.attach(parent)
        try:
            return function(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return run


class TracedSession(Protocol):
    """A session as its span reads it: its identity when it starts, its outcome when it ends."""

    session_id: str
    kind: str
    engine: str
    query: str
    status: str
    output_type: str
    verdict: str
    groundedness_score: float | None
    rounds: int
    error_id: str
    answer: str


class SessionSpan:
    """The session's span, current while the session runs; its outcome is read off the session at the end."""

    def __init__(self, session: TracedSession) -> None:
        self.session = session
        self.span: Span | None = None
        self._token: object | None = None
        self._error_type = ""

    def __enter__(self) -> SessionSpan:
        tracer = _tracer()
        if tracer is None:
            return self
        session = self.session
        parent = otel_context.set_value(SESSION_ID, session.session_id)
        self.span = tracer.start_span(
            f"invoke_agent {AGENT_NAME}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": AGENT_NAME,
                "gen_ai.conversation.id": session.session_id,
                "session.id": session.session_id,
                "diagnosis.session.kind": session.kind,
                "diagnosis.engine": session.engine,
            },
        )
        if capturing_content():
            self.span.set_attribute("gen_ai.input.messages", _json([_text_message("user", session.query)]))
        self._token = otel_context.attach(trace.set_span_in_context(self.span, parent))
        return self

    def failed(self, error: BaseException) -> None:
        """The session's body raised `error` (the session then ends FAILED)."""
        self._error_type = type(error).__name__

    def __exit__(self, error_type: type[BaseException] | None, error: BaseException | None, _tb: Any) -> None:
        if self.span is None:
            return
        otel_context.detach(self._token)
        if error is not None:
            self.failed(error)
        session, span = self.session, self.span
        span.set_attributes(
            {
                "diagnosis.status": session.status,
                "diagnosis.output_type": session.output_type,
                "diagnosis.verdict": session.verdict,
                "diagnosis.rounds": session.rounds,
            }
        )
        if session.groundedness_score is not None:
            span.set_attribute("diagnosis.groundedness_score", session.groundedness_score)
        if session.error_id:
            span.set_attribute("diagnosis.error_id", session.error_id)
        if capturing_content() and session.answer:
            span.set_attribute("gen_ai.output.messages", _json([_text_message("assistant", session.answer)]))
        if self._error_type or session.error_id:
            _failed(span, self._error_type or "_OTHER", f"session failed (error id {session.error_id})")
        span.end()


def session_traced(session: TracedSession) -> SessionSpan:
    return SessionSpan(session)


@dataclass
class _OpenStage:
    stage: Stage
    round: int
    span: Span
    token: object


class TracedRecorder:
    """A `Recorder` whose stages are spans: `stage_started` opens one (current until its step is
    recorded, so the stage's model and tool calls nest in it), `step_recorded` closes it."""

    def __init__(self, recorder: Recorder, tracer: trace.Tracer) -> None:
        self._recorder = recorder
        self._tracer = tracer
        self._open: _OpenStage | None = None

    @property
    def guidance_tools(self) -> Collection[str]:
        return self._recorder.guidance_tools

    def stage_started(self, *, stage: Stage, round: int) -> None:
        span = self._stage_span(stage, round)
        self._open = _OpenStage(stage, round, span, otel_context.attach(trace.set_span_in_context(span)))
        self._recorder.stage_started(stage=stage, round=round)

    def step_recorded(self, step: StepRecord) -> None:
        opened = self._open
        if opened is not None and (opened.stage, opened.round) == (step.stage, step.round):
            span = opened.span
        else:
            # A step no stage_started announced (a verifier skipped by code): a span of no duration.
            opened, span = None, self._stage_span(step.stage, step.round)
        span.set_attributes(
            {
                "diagnosis.step.status": step.status.value,
                "diagnosis.prompt_version": step.prompt_version,
                "diagnosis.parse_status": (step.model_output.get("parse_status") or {}).get("status", ""),
            }
        )
        if step.usage is not None:
            span.set_attribute("diagnosis.llm_calls", step.usage.llm_calls)
        if capturing_content() and step.thought:
            span.set_attribute("diagnosis.thought", step.thought)
        if step.status == StepStatus.FAILED:
            _failed(span, "stage_failed")
        if opened is not None:
            self._closed(opened)
        else:
            span.end()
        self._recorder.step_recorded(step)

    def stage_unfinished(self) -> None:
        """A stage still open when the session stops inside it (its step never recorded) ends failed."""
        if self._open is not None:
            _failed(self._open.span, "stage_unfinished", "the session stopped inside this stage")
            self._closed(self._open)

    def _stage_span(self, stage: Stage, round: int) -> Span:
        return self._tracer.start_span(
            f"stage {stage.value}",
            attributes={"diagnosis.stage": stage.value, "diagnosis.round": round, **_session_attributes()},
        )

    def _closed(self, opened: _OpenStage) -> None:
        self._open = None
        otel_context.detach(opened.token)
        opened.span.end()

    def toolbox(self, *, round: int, max_calls: int, at: datetime | None = None) -> Toolbox:
        return self._recorder.toolbox(round=round, max_calls=max_calls, at=at)

    def tool_results_before(self, *, round: int) -> list[ToolResult]:
        return self._recorder.tool_results_before(round=round)

    def invocations(self) -> Sequence[ToolResult]:
        return self._recorder.invocations()

    def tool_trace_summary(self) -> list[dict]:
        return self._recorder.tool_trace_summary()

    def round_recorded(self, record: RoundRecord) -> None:
        self._recorder.round_recorded(record)


@contextmanager
def stages_traced(recorder: Recorder) -> Iterator[Recorder]:
    """`recorder`, its stages traced while tracing is on; a stage left open at the end ends failed."""
    tracer = _tracer()
    if tracer is None:
        yield recorder
        return
    traced = TracedRecorder(recorder, tracer)
    try:
        yield traced
    finally:
        traced.stage_unfinished()


class ChatSpan:
    """One model call's span; `answered` adds what the response says."""

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def answered(self, response: Any, *, content: str, tool_calls: Sequence[Any]) -> None:
        """`response` is the chat completion; `content` its reply without reasoning (never recorded),
        `tool_calls` the calls it made (`id`, `name`, `arguments`)."""
        span = self.span
        if span is None:
            return
        finish_reasons = [choice.finish_reason or "" for choice in response.choices or []]
        span.set_attributes(
            {
                "gen_ai.response.id": response.id or "",
                "gen_ai.response.model": response.model or "",
                "gen_ai.response.finish_reasons": finish_reasons,
            }
        )
        if response.usage is not None:
            span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": response.usage.completion_tokens,
                }
            )
        if capturing_content():
            message = {
                "role": "assistant",
                "content": content,
                "tool_calls": [
                    {"id": call.id, "function": {"name": call.name, "arguments": call.arguments}}
                    for call in tool_calls
                ],
            }
            output = _message_parts(message) | {"finish_reason": finish_reasons[0] if finish_reasons else ""}
            span.set_attribute("gen_ai.output.messages", _json([output]))


@contextmanager
def chat_traced(
    *,
    model: str,
    stage: str,
    base_url: str,
    messages: Sequence[dict],
    temperature: float,
    max_tokens: int,
    structured: bool,
) -> Iterator[ChatSpan]:
    """A model call (a chat completion) as a client span; an error raised out of it marks it failed
    with the class of its cause (the SDK's error behind the engine's own)."""
    tracer = _tracer()
    if tracer is None:
        yield ChatSpan(None)
        return
    server = urlsplit(base_url)
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAME,
        # The older name of the provider, which some backends still read.
        "gen_ai.system": PROVIDER_NAME,
        "gen_ai.request.model": model,
        "gen_ai.request.temperature": temperature,
        "gen_ai.request.max_tokens": max_tokens,
        "gen_ai.output.type": "json" if structured else "text",
        "diagnosis.stage": stage,
        **_session_attributes(),
    }
    if server.hostname:
        default_port = 443 if server.scheme == "https" else 80
        attributes |= {"server.address": server.hostname, "server.port": server.port or default_port}
    with tracer.start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if capturing_content():
            span.set_attribute("gen_ai.input.messages", _json([_message_parts(m) for m in messages]))
        try:
            yield ChatSpan(span)
        except BaseException as error:
            _failed(span, type(error.__cause__ or error).__name__)
            raise


@dataclass(frozen=True)
class ToolCallTrace:
    """A recorded tool call: when it ran (ns since the epoch) and what it found."""

    tool_name: str
    invocation_id: int
    round: int
    started_ns: int
    ended_ns: int
    source: str
    evidence_status: str
    evidence_refs: int
    error: str
    # The failure's class (`SourceError`), or `tool_failed` when the tool reported it in its output.
    error_type: str
    arguments: dict
    # What the model sees of its result; only asked for when content is captured.
    message: Callable[[], dict]


def tool_calls_traced(calls: Iterable[ToolCallTrace]) -> None:
    """A span per recorded call, under the current span, spanning the time the call ran (the calls of
    a turn run concurrently, and only their insert gives them their ids)."""
    tracer = _tracer()
    if tracer is None:
        return
    capture = capturing_content()
    for call in calls:
        span = tracer.start_span(
            f"execute_tool {call.tool_name}",
            start_time=call.started_ns,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.tool_name,
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": str(call.invocation_id),
                "diagnosis.round": call.round,
                "diagnosis.tool.source": call.source,
                "diagnosis.evidence_status": call.evidence_status,
                "diagnosis.evidence_refs": call.evidence_refs,
                **_session_attributes(),
            },
        )
        if capture:
            span.set_attributes(
                {
                    "gen_ai.tool.call.arguments": _json(call.arguments),
                    "gen_ai.tool.call.result": _json(call.message()),
                }
            )
        if call.error:
            # Why a source failed (refused, unreachable, bad arguments): operations, never evidence. Its
            # words are content all the same (a source's error quotes the query it refused), so without
            # capture the span names the failure's class only.
            _failed(span, call.error_type, call.error if capture else call.error_type)
        span.end(end_time=call.ended_ns)


def _text_message(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _message_parts(message: dict) -> dict:
    """An OpenAI chat message in the conventions' message shape (role and typed parts)."""
    parts: list[dict] = []
    if message.get("role") == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.get("tool_call_id"),
                "response": message.get("content"),
            }
        )
    elif message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return {"role": message.get("role", ""), "parts": parts}
