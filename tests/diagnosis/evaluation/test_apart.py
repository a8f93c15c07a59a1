"""A stand-in server runs in a process of its own while entered, and is gone after; one that cannot
start is a clear error, not a hang."""

from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from diagnosis.evaluation.apart import served_apart
from diagnosis.evaluation.tempo import TempoServer, TempoSpan


class ProcessServer:
    """Answers the id of the process serving it, and the word it was built with."""

    def __init__(self, word: str) -> None:
        answer = f"{os.getpid()} {word}".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> ProcessServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class BrokenServer:
    def __init__(self) -> None:
        raise OSError("address in use")


def test_a_stand_in_is_served_from_a_process_of_its_own_and_stopped_after():
    with served_apart(ProcessServer, "ledger") as url:
        pid, word = httpx2.get(url).text.split()

    assert word == "ledger"
    assert int(pid) != os.getpid()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(url, timeout=2)


def test_the_benchmarks_tempo_answers_from_its_own_process():
    span = TempoSpan("t1", "a", "", "storefront", "GET /cart", 10**18, 10**18 + 5 * 10**6)

    with served_apart(TempoServer, [span]) as url:
        traces = httpx2.get(f"{url}/api/traces/t1").json()

    assert traces["batches"][0]["resource"]["attributes"][0]["value"]["stringValue"] == "storefront"


def test_a_stand_in_that_cannot_start_is_a_clear_error():
    with pytest.raises(RuntimeError, match="BrokenServer 启动失败"), served_apart(BrokenServer):
        pass
