"""The one HTTP client of the evidence sources: timeouts, per-source auth headers, errors that name
the source and the cause. Each request is put on the call's receipt as it is sent (`request_sent`):
its path and query parameters, the base URL without credentials, never a header.

A request costs at most `DIAGNOSIS_SOURCE_TIMEOUT` seconds in all: connect, send and the whole body,
so a server that trickles its answer cannot hold a session longer than that.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import httpx2
from django.conf import settings

from tools.evidence.receipt import SourceRequest, request_sent
from tools.evidence.source import Source

MAX_BODY_BYTES = 20 * 1024 * 1024
ERROR_BODY_CHARS = 300


class SourceError(RuntimeError):
    """A source did not answer usefully: refused, timed out, HTTP error status or not JSON."""

    def __init__(self, *, kind: str, location: str, cause: str) -> None:
        super().__init__(f"{kind} {location}: {cause}")
        self.kind = kind
        self.location = location
        self.cause = cause


def redacted(url: str) -> str:
    """The URL without credentials, as shown in records and pages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every source client: building one reads the CA bundle (tens of
    milliseconds of CPU, holding the interpreter), and an investigation opens a client per call."""
    return httpx2.create_ssl_context()


def source_timeout() -> float:
    return float(settings.DIAGNOSIS["SOURCE_TIMEOUT"])


class HttpSource(Source):
    """Base of the HTTP sources: `get_json(path, params)` against the configured base URL."""

    kind: ClassVar[str]
    # The client of a batch of requests (`one_client`); None: each request opens its own.
    _client: httpx2.Client | None = None

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.location = redacted(base_url)

    def provenance(self) -> tuple[str, str]:
        """What `ToolInvocation.source` / `source_location` record for a call answered by this source."""
        return self.kind, self.location

    def headers(self) -> dict[str, str]:
        return dict(settings.DIAGNOSIS["SOURCE_HEADERS"].get(self.kind, {}))

    def error(self, cause: str) -> SourceError:
        return SourceError(kind=self.kind, location=self.location, cause=cause)

    def data(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        object_hook: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Any:
        """The `data` of a `{status, data}` envelope, as Prometheus and Loki answer; any other
        status is the source's error. `object_hook` as for `get_json`."""
        payload = self.get_json(path, params, object_hook=object_hook)
        if not isinstance(payload, dict) or payload.get("status") != "success":
            raise self.error(f"{path} 返回了非 success 的响应（{str(payload)[:200]}）")
        return payload.get("data")

    @contextmanager
    def one_client(self) -> Iterator[None]:
        """Requests made inside share one client and its connections: a batch of small reads of one
        server (the metric catalog's) costs one client, not one each."""
        with self._new_client() as client:
            self._client = client
            try:
                yield
            finally:
                self._client = None

    def _new_client(self) -> httpx2.Client:
        return httpx2.Client(
            timeout=httpx2.Timeout(source_timeout()), headers=self.headers(), verify=tls_context()
        )

    def get_json(
        self,
        path: str,
        params: dict[str, Any] | list[tuple[str, str]] | None = None,
        *,
        object_hook: Callable[[dict[str, Any]], Any] | None = None,
    ) -> Any:
        """The answer's JSON; `object_hook` sees each object as it is parsed (and may replace it)."""
        timeout = source_timeout()
        deadline = time.monotonic() + timeout
        body = bytearray()
        try:
            with ExitStack() as opened:
                client = self._client or opened.enter_context(self._new_client())
                request = client.build_request("GET", f"{self.base_url}{path}", params=params)
                # On the receipt before it goes out: a request that fails was still sent.
                request_sent(
                    SourceRequest.sent(
                        source=self.kind,
                        base_url=self.location,
                        path=path,
                        params=request.url.params.multi_items(),
                    )
                )
                with closing(client.send(request, stream=True)) as response:
                    for chunk in response.iter_bytes():
                        body.extend(chunk)
                        if time.monotonic() > deadline:
                            raise self.error(f"超时（{timeout:g}s 内未返回完整响应）")
                        if len(body) > MAX_BODY_BYTES:
                            raise self.error(f"响应超过 {MAX_BODY_BYTES // (1024 * 1024)} MB")
        except httpx2.TimeoutException:
            raise self.error(f"超时（{timeout:g}s 内无响应）") from None
        except httpx2.ConnectError as exc:
            raise self.error(f"无法连接（{exc}）") from None
        except httpx2.HTTPError as exc:
            raise self.error(f"请求失败（{type(exc).__name__}: {exc}）") from None
        text = body.decode("utf-8", errors="replace")
        try:
            payload = json.loads(text, object_hook=object_hook)
        except ValueError:
            payload = None
        if response.status_code >= 400:
            raise self.error(f"HTTP {response.status_code}: {_error_text(payload, text)}")
        if payload is None:
            raise self.error(f"返回的不是 JSON（{text[:ERROR_BODY_CHARS]!r}）")
        return payload


def _error_text(payload: Any, text: str) -> str:
    """Prometheus and Loki say what went wrong in `error`; otherwise the start of the body."""
    if isinstance(payload, dict) and payload.get("error"):
        return str(payload["error"])[:ERROR_BODY_CHARS]
    return text.strip()[:ERROR_BODY_CHARS] or "（空响应）"
