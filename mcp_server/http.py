"""`/mcp` over Streamable HTTP, inside the Django site.

The product is served by WSGI (gunicorn under `manage.py serve`, runserver under `quickstart`), and
the SDK's Streamable HTTP transport is an ASGI app whose session manager holds a task group for as
long as it runs. In stateless mode with JSON responses one POST is one complete exchange, so each
request runs its own manager on its own event loop (`async_to_sync`), handing it the request as ASGI
and collecting its one response; no state lives between requests. The services run back in the
request's own thread (`in_calling_thread`), so the request's database connection is the one they use
and Django closes it as after any request. A diagnosis or a check of claims is not among them: its
session is queued for the worker and the thread only waits for it, up to `DIAGNOSIS["MCP_WAIT_SECONDS"]`.
"""

from __future__ import annotations

from functools import cache

import anyio
from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from mcp_server.server import Caller, called_by, in_calling_thread, mcp_server_build

# Django has checked the Host header against ALLOWED_HOSTS before the request gets here.
HOSTS_CHECKED_BY_DJANGO = TransportSecuritySettings(enable_dns_rebinding_protection=False)
# Headers Django writes itself for the body it sends.
HOP_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})
# The token has done its work (the caller is known): the transport never sees it.
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie"})


@cache
def _server() -> Server:
    """One server per process: the tools are the same for every request, only the caller differs.
    Sessions run on the worker: a web thread only waits for them, up to a deadline."""
    return mcp_server_build(run_sync=in_calling_thread, sessions_inline=False)


def _scope(request: HttpRequest) -> dict:
    host, _, port = request.get_host().partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
            if name.lower() not in CREDENTIAL_HEADERS
        ],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (host, int(port or (443 if request.is_secure() else 80))),
    }


async def _exchange(
    *, scope: dict, body: bytes, caller: Caller
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The transport's response to one request: status, headers, body."""
    manager = StreamableHTTPSessionManager(
        app=_server(), json_response=True, stateless=True, security_settings=HOSTS_CHECKED_BY_DJANGO
    )
    response: dict = {"status": 500, "headers": [], "body": []}
    body_read = False
    answered = anyio.Event()

    async def receive() -> dict:
        nonlocal body_read
        if not body_read:
            body_read = True
            return {"type": "http.request", "body": body, "more_body": False}
        # The client stays connected until the whole response is written.
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            response["status"], response["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            response["body"].append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    with called_by(caller):
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    return response["status"], response["headers"], b"".join(response["body"])


def mcp_response(*, request: HttpRequest, caller: Caller) -> HttpResponse:
    """Answer one MCP request of an authenticated caller."""
    status, headers, body = async_to_sync(_exchange)(scope=_scope(request), body=request.body, caller=caller)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        if name.decode("latin-1").lower() not in HOP_HEADERS:
            response.headers[name.decode("latin-1")] = value.decode("latin-1")
    return response
