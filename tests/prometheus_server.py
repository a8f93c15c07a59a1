"""A Prometheus HTTP API stand-in for unit tests (the real server is the integration tests'): every
`GET` answers `{"status": "success", "data": {"resultType": "vector", "result": series}}`, `series`
settable while it runs, and keeps each request's path, parameters and headers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class FakePrometheus:
    def __init__(self, series: list[dict] | None = None) -> None:
        self.series = list(series or [])
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                params = {key: values[-1] for key, values in parse_qs(url.query).items()}
                server.requests.append({"path": url.path, "params": params, "headers": dict(self.headers)})
                data = json.dumps(
                    {"status": "success", "data": {"resultType": "vector", "result": server.series}}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *_) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
