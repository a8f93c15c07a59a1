"""A local HTTP server receiving report notifications (DIAGNOSIS_NOTIFY_URL) for the tests.

It binds 127.0.0.1 on a free port, records each POST (headers and JSON body) and answers with the
next status of `statuses` (then 200).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict
    body: dict


@dataclass
class NotifyReceiver:
    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                # Recorded before answering: once the sender has its answer, the test sees the body.
                with receiver.lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.received.append(Received(dict(self.headers), body))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"receiver unavailable")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/aiops"

    def __enter__(self) -> NotifyReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
