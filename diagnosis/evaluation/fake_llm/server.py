"""A small local OpenAI-compatible server for tests, `manage.py eval` and the benchmark.

    with FakeOpenAIServer({"ExecutorOutput": [...], "verifier": [...]}) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        ...
        server.requests  # every request body received, in order

It serves `POST /v1/chat/completions` (non-streaming) on 127.0.0.1 from a thread. Replies are
scripted per stage (`PlannerOutput`, `ExecutorOutput`, `VerifierOutput`, `ComposerOutput`, and
`CauseOutput` for the executor's cause path; the stage names `planner` / `executor` / `verifier` /
`composer` / `cause` are accepted as aliases) and consumed in
order. The stage of a request is its `response_format.json_schema.name` when there is one, else the
last stage schema name its `system` message mentions (json_object / prompted modes and tool turns
carry no schema name). A reply is one of:

- a dict: returned as the message content (JSON);
- a str: returned as the content verbatim (e.g. malformed JSON, fenced JSON, `<think>` text);
- `{"tool_calls": [{"name": ALERTS.tool, "arguments": {...}}, ...]}`: an executor tool turn,
  as native `tool_calls` when the request offers `tools`, else written in the text as
  `<tool_call>{...}</tool_call>` blocks (prompted tool calls);
- `{"raw": <str or dict content>, "finish_reason": "length", "reasoning_content": "..."}`: a reply
  with its finish reason and reasoning field set explicitly;
- `{"http_status": 500}`: an error response (with `retry-after-ms: 1` so SDK retries stay fast);
- `{"delay_s": 2, ...}`: sleep first (to trigger client timeouts), then reply with the rest
  (or the default when nothing else is given);
- a callable `(request_json) -> reply` returning any of the above (None: the honest default).

Like real servers it honours the request's `stop` sequences (the reply ends before the first one)
and token cap (`max_completion_tokens` / `max_tokens`): a longer reply is cut there with
`finish_reason: "length"`. Options model other endpoints:
`latency_s` (every reply takes that long, for the benchmark), `refuse_json_schema` (HTTP 400 on a
`json_schema` response format, as DeepSeek or llama-cpp-python's server), `refuse_stop` (HTTP 400 on
a request with `stop`, as OpenAI's reasoning models), `fan_out` (the honest
executor's first turn calls that many tools at once).

Placeholders in string values are filled from the tool messages the request carries (earlier
rounds' `prior_tool_messages` first, then this round's `role: tool` messages; 0-based n):
`{{inv:<tool>}}` / `{{inv:<tool>:<n>}}` → the invocation id of that tool's n-th call (an int when
the placeholder is the whole string), `{{ref:<tool>:<n>:<raw_path>}}` → that evidence ref's text.
An unresolvable placeholder answers HTTP 400 naming it.

With no script left for a stage the server behaves honestly: the planner plans every evidence
tool for the services and alerts named in the question; the executor calls `query_alerts` (for
the focus service; `fan_out` calls when set) and then states one claim citing the first evidence ref
exactly; on the cause path it explains the first candidate in its subject's and mechanism's words;
the verifier marks each claim it is shown `direct_observation` when code found all its facts in its
excerpts, else `unsupported`; the composer writes from its material only. A session through the llm engine passes with no script.

Usage is reported with prompt/completion tokens ≈ UTF-8 bytes / 3 (the prompts are mostly Chinese:
within 5% of Qwen2.5's tokenizer on a session's prompts). Tool results reach the fake as
`role: tool` messages (native) or `<tool_result>` blocks in user messages (prompted).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS, current_name

STAGE_SCHEMAS = {
    "planner": "PlannerOutput",
    "executor": "ExecutorOutput",
    "verifier": "VerifierOutput",
    "composer": "ComposerOutput",
    # The executor's cause path (the model explains code's ranked candidates by number).
    "cause": "CauseOutput",
}
EVIDENCE_TOOLS = (ALERTS.tool, LOGS.tool, KNOWLEDGE.tool)
INPUT_BLOCK = re.compile(r"<input>\s*(?P<json>.*?)\s*</input>", re.DOTALL)
TOOL_RESULT_BLOCK = re.compile(r"<tool_result>\s*(?P<json>.*?)\s*</tool_result>", re.DOTALL)
STAGE_NAME = re.compile(r"\b(PlannerOutput|ExecutorOutput|VerifierOutput|ComposerOutput|CauseOutput)\b")
# What the engine's prompted tool-call instructions show the model (diagnosis.engines.llm.tool_calls).
PROMPTED_TOOL_CALL = "<tool_call>"
BYTES_PER_TOKEN = 3
INVOCATION_PLACEHOLDER = re.compile(r"\{\{inv:(?P<tool>[a-z_]+)(?::(?P<n>\d+))?\}\}")
REF_PLACEHOLDER = re.compile(r"\{\{ref:(?P<tool>[a-z_]+):(?P<n>\d+):(?P<path>[^}]+)\}\}")
# The names the question writes, as the honest planner copies them into `focus`: hyphenated names
# (services, hosts) and CamelCase alert names; the executor asks query_alerts about the first
# hyphenated one.
NAME_PATTERN = re.compile(r"(?<![A-Za-z0-9-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![A-Za-z0-9-])")
ALERT_PATTERN = re.compile(r"\b(?:[A-Z][a-z0-9]+){2,}\b")

Reply = Any  # dict | str | Callable[[dict], "Reply"]


class ScriptError(ValueError):
    """A scripted reply cannot be served (e.g. a placeholder without a matching tool message)."""


SDK_ENVIRONMENT = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


@contextmanager
def fake_llm_environment(
    script: Mapping[str, Iterable[Reply]] | None = None, **options: Any
) -> Iterator[FakeOpenAIServer]:
    """Serve `script` and point the openai SDK at it through its environment; restore it afterwards."""
    saved = {key: os.environ.get(key) for key in SDK_ENVIRONMENT}
    with FakeOpenAIServer(script, **options) as server:
        os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="fake-key")
        try:
            yield server
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


class FakeOpenAIServer:
    def __init__(
        self,
        script: Mapping[str, Iterable[Reply]] | None = None,
        *,
        latency_s: float = 0.0,
        refuse_json_schema: bool = False,
        refuse_stop: bool = False,
        fan_out: int = 1,
    ) -> None:
        self.latency_s = latency_s
        self.refuse_json_schema = refuse_json_schema
        self.refuse_stop = refuse_stop
        self.fan_out = fan_out
        self._script: dict[str, deque] = {}
        for key, replies in (script or {}).items():
            name = STAGE_SCHEMAS.get(key, key)
            if name not in _HONEST_DEFAULTS:
                raise ScriptError(f"unknown stage {key!r} in script; use one of {sorted(_HONEST_DEFAULTS)}")
            self._script.setdefault(name, deque()).extend(replies)
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def requests_for(self, schema_name: str) -> list[dict]:
        name = STAGE_SCHEMAS.get(schema_name, schema_name)
        return [request for request in self.requests if _schema_name(request) == name]

    def __enter__(self) -> FakeOpenAIServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def respond(self, request: dict) -> tuple[int, dict, dict]:
        """(status, headers, body) for one chat.completions request."""
        name = _schema_name(request)
        with self._lock:
            self.requests.append(request)
            if name not in _HONEST_DEFAULTS:
                return _error(HTTPStatus.BAD_REQUEST, f"cannot tell the stage of this request: {name!r}")
            if (
                self.refuse_json_schema
                and (request.get("response_format") or {}).get("type") == "json_schema"
            ):
                return _error(
                    HTTPStatus.BAD_REQUEST,
                    "response_format.type: Input should be 'text' or 'json_object'",
                    retry=False,
                )
            if self.refuse_stop and "stop" in request:
                return _error(
                    HTTPStatus.BAD_REQUEST,
                    "Unsupported parameter: 'stop' is not supported with this model.",
                    retry=False,
                )
            queue = self._script.get(name)
            reply = queue.popleft() if queue else None
            self._ids += 1
            completion_id = f"chatcmpl-fake-{self._ids}"
        if self.latency_s:
            self._stopping.wait(self.latency_s)
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, dict) and "delay_s" in reply:
            self._stopping.wait(reply["delay_s"])
            reply = {key: value for key, value in reply.items() if key != "delay_s"} or None
        if isinstance(reply, dict) and "http_status" in reply:
            return _error(reply["http_status"], reply.get("message", "scripted failure"))
        if reply is None:
            reply = _HONEST_DEFAULTS[name](request, self.fan_out)
        finish_reason = None
        if isinstance(reply, dict) and "raw" in reply:
            finish_reason = reply.get("finish_reason")
            extra = {key: reply[key] for key in ("reasoning_content",) if key in reply}
            reply = reply["raw"]
        else:
            extra = {}
        try:
            message = (
                _message(reply, _tool_messages(request), native_tools=bool(request.get("tools"))) | extra
            )
        except ScriptError as exc:
            return _error(HTTPStatus.BAD_REQUEST, str(exc))
        return HTTPStatus.OK, {}, _completion(completion_id, request, message, finish_reason)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOpenAIServer

    def handle_error(self, request, client_address) -> None:
        # A client that timed out and hung up is expected here; nothing to report.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(*_error(HTTPStatus.NOT_FOUND, f"no route {self.path}"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._send(*_error(HTTPStatus.BAD_REQUEST, f"request body is not JSON: {exc}"))
            return
        try:
            response = self.server.fake.respond(request)
        except Exception as exc:  # a broken script must reach the client as an error, not a hang-up
            status, _, body = _error(HTTPStatus.INTERNAL_SERVER_ERROR, f"fake server failed: {exc!r}")
            response = status, {"x-should-retry": "false"}, body
        self._send(*response)

    def _send(self, status: int, headers: dict, body: dict) -> None:
        payload = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _schema_name(request: dict) -> str | None:
    response_format = request.get("response_format") or {}
    named = (response_format.get("json_schema") or {}).get("name")
    if named:
        return named
    system = "\n".join(
        m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "system"
    )
    mentioned = STAGE_NAME.findall(system)
    return mentioned[-1] if mentioned else None


def _error(status: int, message: str, *, retry: bool = True) -> tuple[int, dict, dict]:
    body = {"error": {"message": message, "type": "fake_server_error", "code": int(status)}}
    headers = {"retry-after-ms": "1"} if retry else {"x-should-retry": "false"}
    return int(status), headers, body


def _token_cap(request: dict) -> int | None:
    return request.get("max_completion_tokens") or request.get("max_tokens")


def _completion(completion_id: str, request: dict, message: dict, finish_reason: str | None) -> dict:
    prompt = "".join(m.get("content") or "" for m in request.get("messages", []))
    if request.get("tools"):
        prompt += json.dumps(request["tools"], ensure_ascii=False)
    content = message.get("content") or ""
    stops = [content.find(stop) for stop in request.get("stop") or [] if stop in content]
    if stops:
        content = content[: min(stops)]
        message = message | {"content": content}
        finish_reason = "stop"
    cap = _token_cap(request)
    if cap and _tokens(content) > cap:
        message = message | {"content": content.encode()[: cap * BYTES_PER_TOKEN].decode(errors="ignore")}
        finish_reason = "length"
    completion = message.get("content") or ""
    if message.get("tool_calls"):
        completion += json.dumps(message["tool_calls"], ensure_ascii=False)
    prompt_tokens = max(1, _tokens(prompt))
    completion_tokens = max(1, _tokens(completion))
    if finish_reason is None:
        finish_reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _tokens(text: str) -> int:
    return len(text.encode()) // BYTES_PER_TOKEN


def _message(reply: Reply, tool_messages: list[dict], *, native_tools: bool) -> dict:
    if isinstance(reply, str):
        return {"role": "assistant", "content": _filled(reply, tool_messages)}
    reply = _filled(reply, tool_messages)
    if "tool_calls" in reply and not native_tools:
        blocks = [
            PROMPTED_TOOL_CALL
            + json.dumps({"name": call["name"], "arguments": call.get("arguments", {})}, ensure_ascii=False)
            + "</tool_call>"
            for call in reply["tool_calls"]
        ]
        return {"role": "assistant", "content": "\n".join(blocks)}
    if "tool_calls" in reply:
        return {
            "role": "assistant",
            "content": reply.get("content"),
            "tool_calls": [
                {
                    "id": f"call_{index}_{call['name']}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments", {}), ensure_ascii=False),
                    },
                }
                for index, call in enumerate(reply["tool_calls"])
            ],
        }
    return {"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)}


def _tool_messages(request: dict) -> list[dict]:
    """Earlier rounds' tool messages (the executor prompt's `prior_tool_messages`), then this turn's."""
    found = list(_stage_input(request).get("prior_tool_messages", []))
    for message in request.get("messages", []):
        if message.get("role") == "tool":
            texts = [message.get("content") or ""]
        elif message.get("role") == "user":
            texts = [match["json"] for match in TOOL_RESULT_BLOCK.finditer(message.get("content") or "")]
        else:
            continue
        for text in texts:
            try:
                content = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(content, dict):
                found.append(content)
    return found


def _filled(value: Any, tool_messages: list[dict]) -> Any:
    if isinstance(value, dict):
        return {key: _filled(item, tool_messages) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, tool_messages) for item in value]
    if not isinstance(value, str):
        return value
    whole = INVOCATION_PLACEHOLDER.fullmatch(value)
    if whole:
        return _invocation(tool_messages, whole)["invocation_id"]
    value = INVOCATION_PLACEHOLDER.sub(lambda m: str(_invocation(tool_messages, m)["invocation_id"]), value)
    return REF_PLACEHOLDER.sub(lambda m: _ref_text(tool_messages, m), value)


def _invocation(tool_messages: list[dict], match: re.Match) -> dict:
    # A script written before a tool was renamed names it by its former name.
    tool = current_name(match["tool"])
    calls = [m for m in tool_messages if m.get("tool_name") == tool and "invocation_id" in m]
    n = int(match["n"] or 0)
    if n >= len(calls):
        raise ScriptError(
            f"placeholder {match.group(0)}: the request has {len(calls)} {match['tool']} tool messages"
        )
    return calls[n]


def _ref_text(tool_messages: list[dict], match: re.Match) -> str:
    invocation = _invocation(tool_messages, match)
    for ref in invocation.get("evidence_refs", []):
        if ref.get("raw_path") == match["path"]:
            return ref["text"]
    raise ScriptError(f"placeholder {match.group(0)}: no evidence ref at {match['path']}")


# --- Honest default behaviour, used when a stage has no script left. ---


def _stage_input(request: dict) -> dict:
    """The stage input the prompt carries in its `<input>` block (see prompts/*.md)."""
    prompt = next(
        (m.get("content") or "" for m in request.get("messages", []) if m.get("role") == "user"), ""
    )
    match = INPUT_BLOCK.search(prompt)
    return json.loads(match["json"]) if match else {}


def _honest_plan(request: dict, fan_out: int) -> dict:
    query = _stage_input(request).get("query", "")
    focus = list(dict.fromkeys(NAME_PATTERN.findall(query) + ALERT_PATTERN.findall(query)))
    return {
        "goal": query,
        "steps": [{"tool": tool, "purpose": f"用 {tool} 收集与问题相关的证据"} for tool in EVIDENCE_TOOLS],
        "narrow_scope": False,
        "focus": focus,
        "excluded_topics": [],
    }


def _honest_execution(request: dict, fan_out: int) -> dict:
    tool_messages = [m for m in _tool_messages(request) if "invocation_id" in m]
    if not tool_messages and _tools_offered(request):
        stage_input = _stage_input(request)
        plan = stage_input.get("plan") or {}
        services = [item for item in plan.get("focus", []) if NAME_PATTERN.fullmatch(item)]
        service = services[0] if services else None
        calls = [{"name": ALERTS.tool, "arguments": {"service": service} if service else {}}]
        query = stage_input.get("query", "")
        extra_calls = [
            {"name": LOGS.tool, "arguments": {"query": query, "service": service}},
            {"name": KNOWLEDGE.tool, "arguments": {"query": query}},
            {"name": ALERTS.tool, "arguments": {}},
        ]
        calls += [extra_calls[i % len(extra_calls)] for i in range(fan_out - 1)]
        return {"tool_calls": calls}
    cited = next((m for m in tool_messages if m.get("evidence_refs")), None)
    return _honest_claims(cited)


def _tools_offered(request: dict) -> bool:
    """A tool turn: native tools offered, or prompted tool instructions and not yet told to stop."""
    if request.get("tools"):
        return request.get("tool_choice") != "none"
    messages = request.get("messages", [])
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    last = messages[-1] if messages else {}
    return PROMPTED_TOOL_CALL in system and not (
        last.get("role") == "user" and "ExecutorOutput" in (last.get("content") or "")
    )


def _honest_claims(cited: dict | None) -> dict:
    claims = []
    if cited is not None:
        ref = cited["evidence_refs"][0]
        no_hit = ref["raw_path"] == "$.no_evidence"
        claims.append(
            {
                "claim_id": "claim-1",
                "claim_type": "negative_observation" if no_hit else "observation",
                "claim_text": ref["text"],
                "evidence_bindings": [
                    {
                        "tool_name": cited["tool_name"],
                        "source_invocation_id": cited["invocation_id"],
                        "raw_path": ref["raw_path"],
                        "evidence_excerpt": ref["text"],
                    }
                ],
            }
        )
    return {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "missing_info": [] if claims else ["未获得可引用的工具证据"],
        "recommended_actions": [],
        "diagnosis_summary": f"引用 {len(claims)} 条工具证据",
        "user_facing_answer": claims[0]["claim_text"] if claims else "未获得可引用的工具证据",
    }


def _honest_explanation(request: dict, fan_out: int) -> dict:
    """The first candidate explained in its own words (subject and mechanism, no number of its own)."""
    candidates = _stage_input(request).get("candidates", [])
    return {
        "explanations": [
            {"candidate": c["candidate"], "text": f"{c['subject']}：{c['mechanism']}，可能与所问的现象有关"}
            for c in candidates[:1]
        ],
        "next_checks": [],
    }


def _honest_verification(request: dict, fan_out: int) -> dict:
    """Each claim shown (with its verified excerpts and code's checks) is a direct observation when
    code found every fact of it in its excerpts, unsupported otherwise."""
    claims = _stage_input(request).get("claims", [])
    return {
        "claim_checks": [
            {
                "claim_id": claim["claim_id"],
                "verification": "unsupported" if claim.get("facts_not_in_excerpts") else "direct_observation",
                "detail": f"摘录 {claim['excerpts'][0]['source']} 写明了断言的内容"
                if claim.get("excerpts")
                else "没有摘录",
            }
            for claim in claims
        ]
    }


def _honest_composition(request: dict, fan_out: int) -> dict:
    material = _stage_input(request)
    sections = [
        ("结论", material.get("confirmed_findings", [])),
        ("可能的情况", material.get("reasonable_inferences", [])),
        ("证据缺口", material.get("gaps", [])),
        ("建议下一步", material.get("allowed_actions", [])),
    ]
    lines = []
    for title, items in sections:
        if items:
            lines.append(f"**{title}**")
            lines.extend(f"- {_material_text(item)}" for item in items)
    return {"answer": "\n".join(lines) or "当前证据不足以得出结论。"}


def _material_text(item: Any) -> str:
    # Findings and inferences are claim items (diagnosis.pipeline.composer); gaps and actions are strings.
    return item["claim_text"] if isinstance(item, dict) else str(item)


_HONEST_DEFAULTS: dict[str, Callable[[dict, int], dict]] = {
    "PlannerOutput": _honest_plan,
    "ExecutorOutput": _honest_execution,
    "VerifierOutput": _honest_verification,
    "ComposerOutput": _honest_composition,
    "CauseOutput": _honest_explanation,
}
