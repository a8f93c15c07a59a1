"""A small server speaking Loki's HTTP API, for tests: Loki is not installable here (neither in
Debian nor on PyPI). It follows the documented request and response shapes
(https://grafana.com/docs/loki/latest/reference/loki-http-api/): `GET /loki/api/v1/query_range`
(query, start, end in ns, limit, direction) answering `{"status": "success", "data": {"resultType":
"streams", "result": [{"stream": {...}, "values": [["<ns>", "<line>"], ...]}]}}`, `GET
/loki/api/v1/labels`, `GET /loki/api/v1/label/<name>/values`, and `POST /loki/api/v1/push` (JSON
`{"streams": [{"stream": {...}, "values": [["<ns>", "<line>"], ...]}]}`, 204) as a log shipper
sends lines; with a tenant set, requests without
that `X-Scope-OrgID` get 401 `no org id`, as a multi-tenant Loki answers.

LogQL: a stream selector of `=`, `!=`, `=~`, `!~` matchers and `|=` / `|~` line filters (the subset
the product writes); anything else is a 400 parse error, as Loki would answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
FILTER = re.compile(r"\s*(\|=|\|~)\s*(?:`([^`]*)`|\"((?:[^\"\\]|\\.)*)\")")


class LogQLError(ValueError):
    pass


def parse_logql(query: str):
    query = query.strip()
    if not query.startswith("{") or "}" not in query:
        raise LogQLError(f"parse error : syntax error: unexpected input {query[:20]!r}")
    selector, rest = query[1:].split("}", 1)
    matchers, position = [], 0
    while position < len(selector):
        match = MATCHER.match(selector, position)
        if not match:
            raise LogQLError(f"parse error : bad matcher at {selector[position:]!r}")
        matchers.append((match[1], match[2], json.loads(f'"{match[3]}"')))
        position = match.end()
    if not any(op in ("=", "=~") and not re.fullmatch(value, "") for _, op, value in matchers):
        raise LogQLError(
            "parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value"
        )
    filters, position = [], 0
    while rest[position:].strip():
        match = FILTER.match(rest, position)
        if not match:
            raise LogQLError(f"parse error : unexpected {rest[position:]!r}")
        filters.append((match[1], match[2] if match[2] is not None else json.loads(f'"{match[3]}"')))
        position = match.end()
    return matchers, filters


def _flags(pattern: str) -> tuple[str, int]:
    if pattern.startswith("(?i)"):
        return pattern[4:], re.IGNORECASE
    return pattern, 0


def stream_matches(labels: dict, matchers) -> bool:
    for name, op, value in matchers:
        actual = labels.get(name, "")
        if (op == "=" and actual != value) or (op == "!=" and actual == value):
            return False
        if op in ("=~", "!~"):
            found = re.fullmatch(value, actual) is not None
            if found != (op == "=~"):
                return False
    return True


def line_matches(line: str, filters) -> bool:
    for op, value in filters:
        if op == "|=" and value not in line:
            return False
        if op == "|~":
            pattern, flags = _flags(value)
            if not re.search(pattern, line, flags):
                return False
    return True


class FakeLoki:
    """Streams `[{"stream": labels, "lines": [{"seconds_ago", "line"}]}]` relative to start-up."""

    def __init__(self, streams: list[dict], *, tenant: str | None = None) -> None:
        now_ns = time.time_ns()
        self.streams = [
            (
                entry["stream"],
                [(now_ns - int(line["seconds_ago"] * 1e9), line["line"]) for line in entry["lines"]],
            )
            for entry in streams
        ]
        self.tenant = tenant
        self.push_lock = threading.Lock()
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                params = {key: values[-1] for key, values in parse_qs(url.query).items()}
                server.requests.append({"path": url.path, "params": params, "headers": dict(self.headers)})
                if server.tenant and self.headers.get("X-Scope-OrgID") != server.tenant:
                    return self._send(401, "no org id\n", "text/plain")
                try:
                    status, body = server.answer(url.path, params)
                except LogQLError as exc:
                    return self._send(400, f"{exc}\n", "text/plain")
                self._send(status, json.dumps(body), "application/json")

            def do_POST(self):
                url = urlsplit(self.path)
                if server.tenant and self.headers.get("X-Scope-OrgID") != server.tenant:
                    return self._send(401, "no org id\n", "text/plain")
                if url.path != "/loki/api/v1/push":
                    return self._send(404, "404 page not found\n", "text/plain")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    streams = json.loads(body)["streams"]
                    for entry in streams:
                        server.push(entry["stream"], [(int(ns), line) for ns, line in entry["values"]])
                except (ValueError, KeyError, TypeError) as exc:
                    return self._send(400, f"loghttp.PushRequest: {exc}\n", "text/plain")
                self.send_response(204)
                self.end_headers()

            def _send(self, status, text, content_type):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeLoki:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, labels: dict, values: list[tuple[int, str]]) -> None:
        """Append lines to the stream with these labels (a new stream for new labels)."""
        with self.push_lock:
            lines = next((lines for known, lines in self.streams if known == labels), None)
            if lines is None:
                lines = []
                self.streams.append((dict(labels), lines))
            lines.extend(values)

    def answer(self, path: str, params: dict) -> tuple[int, dict]:
        if path == "/loki/api/v1/labels":
            names = sorted({name for labels, _ in self.streams for name in labels})
            return 200, {"status": "success", "data": names}
        if match := re.fullmatch(r"/loki/api/v1/label/([^/]+)/values", path):
            values = sorted({labels[match[1]] for labels, _ in self.streams if match[1] in labels})
            return 200, {"status": "success", "data": values}
        if path == "/loki/api/v1/query_range":
            return 200, self.query_range(params)
        return 404, {"status": "error", "error": "404 page not found"}

    def query_range(self, params: dict) -> dict:
        matchers, filters = parse_logql(params.get("query", ""))
        start = int(params.get("start") or time.time_ns() - 3600 * 10**9)
        end = int(params.get("end") or time.time_ns())
        limit = int(params.get("limit", 100))
        backward = params.get("direction", "backward") == "backward"
        found = [
            (labels, ns, line)
            for labels, lines in self.streams
            if stream_matches(labels, matchers)
            for ns, line in lines
            if start <= ns <= end and line_matches(line, filters)
        ]
        found.sort(key=lambda entry: entry[1], reverse=backward)
        result: dict[str, dict] = {}
        for labels, ns, line in found[:limit]:
            key = json.dumps(labels, sort_keys=True)
            result.setdefault(key, {"stream": labels, "values": []})["values"].append([str(ns), line])
        return {"status": "success", "data": {"resultType": "streams", "result": list(result.values())}}
