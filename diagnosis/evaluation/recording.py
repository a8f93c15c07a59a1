"""A recorded world: what real sources answered, kept as exchanges and served again offline.

`RecordingProxy` stands between the tools and live sources (Prometheus, Alertmanager, Loki) and
keeps every answer; `ReplayServer` serves a recording back on one local port, each source under its
own prefix (`/prometheus/api/v1/query?…`). The clock is pinned while recording, so a replayed
session asks with the same times and a request matches its exchange exactly; one the recording
does not hold gets a 502 naming it, which fails the session's tool call as a real outage would.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx2
from pydantic import BaseModel, ConfigDict

RECORDING_FILE = "recording.json"
SOURCES = ("prometheus", "alertmanager", "loki")
# Headers a source's answer depends on, kept on the exchange (Loki's tenant).
REQUEST_HEADERS = ("x-scope-orgid",)
# A request's bounds, not what it asks: the timeout follows DIAGNOSIS_SOURCE_TIMEOUT where the world is
# replayed, and a recorded answer lies within any limit the product asks with.
BOUND_PARAMS = frozenset({"timeout", "limit"})


class Exchange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    path: str
    # The query string's pairs in their order: the key a replayed request must match.
    params: list[tuple[str, str]]
    headers: dict[str, str] = {}
    status: int
    content_type: str
    body: str

    def key(self) -> tuple:
        return exchange_key(self.source, self.path, self.params, self.headers)


class Recording(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The pinned clock of the recording: replayed cases run at this moment.
    recorded_at: datetime
    sources: list[str]
    exchanges: list[Exchange]

    @classmethod
    def read(cls, folder: Path) -> Recording:
        return cls.model_validate_json((folder / RECORDING_FILE).read_text(encoding="utf-8"))

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RECORDING_FILE
        path.write_text(self.model_dump_json(indent=1) + "\n", encoding="utf-8")
        return path


def exchange_key(source: str, path: str, params: list[tuple[str, str]], headers: dict[str, str]) -> tuple:
    asked = sorted((name, value) for name, value in params if name not in BOUND_PARAMS)
    return source, path, tuple(asked), tuple(sorted(headers.items()))


def _split(handler: BaseHTTPRequestHandler) -> tuple[str, str, list[tuple[str, str]], dict[str, str]]:
    parts = urlsplit(handler.path)
    source, _, rest = parts.path.lstrip("/").partition("/")
    headers = {name: handler.headers[name] for name in REQUEST_HEADERS if handler.headers.get(name)}
    return source, "/" + rest, parse_qsl(parts.query, keep_blank_values=True), headers


# (source, path, query pairs, kept headers) → (status, content type, body)
Answer = Callable[[str, str, list[tuple[str, str]], dict[str, str]], tuple[int, str, str]]


class _Server:
    """One local HTTP server on a free port, run in a thread for the life of a `with` block, each
    request answered by `answer`."""

    def __init__(self, answer: Answer) -> None:

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_) -> None:
                return

            def do_GET(self) -> None:
                source, path, params, headers = _split(self)
                status, content_type, body = answer(source, path, params, headers)
                payload = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, source: str) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/{source}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class ReplayServer(_Server):
    def __init__(self, recording: Recording) -> None:
        super().__init__(self._replayed)
        self.recording = recording
        self.exchanges = {exchange.key(): exchange for exchange in recording.exchanges}
        self.misses: list[str] = []

    def _replayed(self, source, path, params, headers):
        exchange = self.exchanges.get(exchange_key(source, path, params, headers))
        if exchange is None:
            asked = f"{source} {path}?{'&'.join(f'{k}={v}' for k, v in params)}"
            self.misses.append(asked)
            return 502, "text/plain; charset=utf-8", f"not in the recording: {asked}"
        return exchange.status, exchange.content_type, exchange.body


class RecordingProxy(_Server):
    def __init__(self, upstreams: dict[str, str], *, timeout: float = 30.0) -> None:
        super().__init__(self._forwarded)
        self.upstreams = upstreams
        self.client = httpx2.Client(timeout=timeout)
        self.lock = threading.Lock()
        self.exchanges: dict[tuple, Exchange] = {}

    def _forwarded(self, source, path, params, headers):
        upstream = self.upstreams.get(source)
        if upstream is None:
            return 502, "text/plain; charset=utf-8", f"no upstream for source {source!r}"
        response = self.client.get(f"{upstream.rstrip('/')}{path}", params=params, headers=headers)
        exchange = Exchange(
            source=source,
            path=path,
            params=params,
            headers=headers,
            status=response.status_code,
            content_type=response.headers.get("content-type", "application/json"),
            body=response.text,
        )
        with self.lock:
            self.exchanges[exchange.key()] = exchange
        return exchange.status, exchange.content_type, exchange.body

    def recording(self, *, recorded_at: datetime) -> Recording:
        with self.lock:
            exchanges = sorted(self.exchanges.values(), key=lambda e: (e.source, e.path, e.params))
        return Recording(recorded_at=recorded_at, sources=sorted(self.upstreams), exchanges=exchanges)

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        self.client.close()


def recording_subjects(
    recording: Recording, *, service_labels: tuple[str, ...] = ("service",)
) -> tuple[set[str], set[tuple[str, str]]]:
    """The services and (alert, service) pairs the recorded answers name, read from their raw JSON:
    the eval's own reading of the world, not the product's. A service is a value of the first of
    `service_labels` a series or alert has (`service`, else `app`, else `job`, as the team names them)."""
    services: set[str] = set()
    alert_services: set[tuple[str, str]] = set()

    def service_of(labels: dict) -> str:
        return next((labels[name] for name in service_labels if labels.get(name)), "")

    for exchange in recording.exchanges:
        if exchange.status != 200 or "json" not in exchange.content_type:
            continue
        data = json.loads(exchange.body)
        data = data.get("data", data) if isinstance(data, dict) else data
        if any(exchange.path.endswith(f"/label/{label}/values") for label in service_labels):
            services.update(data or [])
        elif exchange.path == "/api/v1/rules":
            for group in (data or {}).get("groups", []):
                for rule in group.get("rules", []):
                    service = service_of(rule.get("labels") or {})
                    for alert in rule.get("alerts") or [{"labels": {}}]:
                        pair = (rule["name"], service_of(alert.get("labels") or {}) or service)
                        alert_services.add(pair)
                        services.add(pair[1])
    services.discard("")
    return services, alert_services


@contextmanager
def replayed(folder: Path) -> Iterator[ReplayServer]:
    with ReplayServer(Recording.read(folder)) as server:
        yield server
