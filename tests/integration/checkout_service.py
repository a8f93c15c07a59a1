"""A small upstream service behind the fault stack's nginx: `checkout`, as a team's own code would be.

Each `/api/checkout/` request reads a cart from Redis and takes the row lock of one account in
PostgreSQL (`lock_timeout` bounds the wait: past it the request answers 500). `/health` answers 200.
`/metrics` is the Prometheus text format a client library writes: the CPU time of its whole process
group (a child it starts is its CPU too), its resident memory, its requests and their latency.
`POST /fault/slow?seconds=S` makes every request that much slower (0: as before); `POST
/fault/burner?seconds=S` starts a busy loop in its process group for at most S seconds (0: stops it).
A request that fails writes a logfmt line to `--log`: its path, the upstream it failed on (host:port)
and the error, as a service's own error log says which dependency failed.

    python -m tests.integration.checkout_service --port P --postgres DSN --redis-port R --log FILE
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TextIO
from urllib.parse import parse_qs, urlsplit

import psycopg
import redis
from psycopg.conninfo import conninfo_to_dict

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LOCK_TIMEOUT = "1s"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = resource.getpagesize()


class Metrics:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.buckets = [0] * len(BUCKETS)
        self.count = 0
        self.total = 0.0

    def observe(self, code: int, seconds: float) -> None:
        with self.lock:
            self.requests[str(code)] = self.requests.get(str(code), 0) + 1
            self.count += 1
            self.total += seconds
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[index] += 1

    def text(self) -> str:
        with self.lock:
            lines = [
                "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
                "# TYPE process_cpu_seconds_total counter",
                f"process_cpu_seconds_total {group_cpu_seconds():.2f}",
                "# HELP process_resident_memory_bytes Resident memory size in bytes.",
                "# TYPE process_resident_memory_bytes gauge",
                f"process_resident_memory_bytes {resident_bytes()}",
                "# HELP http_requests_total Total HTTP requests served, by status code.",
                "# TYPE http_requests_total counter",
                *(f'http_requests_total{{code="{code}"}} {n}' for code, n in sorted(self.requests.items())),
                "# HELP http_request_duration_seconds Latency of HTTP requests served.",
                "# TYPE http_request_duration_seconds histogram",
                *(
                    f'http_request_duration_seconds_bucket{{le="{bound}"}} {n}'
                    for bound, n in zip(BUCKETS, self.buckets, strict=True)
                ),
                f'http_request_duration_seconds_bucket{{le="+Inf"}} {self.count}',
                f"http_request_duration_seconds_sum {self.total:.4f}",
                f"http_request_duration_seconds_count {self.count}",
            ]
        return "\n".join(lines) + "\n"


def group_cpu_seconds() -> float:
    """User and system CPU of every process in this process group (its children's included)."""
    group, ticks = os.getpgrp(), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command: state, ppid, pgrp, … utime (14th field overall), stime (15th).
        if int(fields[2]) == group:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / CLOCK_TICKS


def resident_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE_SIZE


class Checkout(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, postgres: str, redis_port: int, log: TextIO) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.postgres = postgres
        target = conninfo_to_dict(postgres)
        self.postgres_address = f"{target['host']}:{target['port']}"
        self.redis_address = f"127.0.0.1:{redis_port}"
        self.cache = redis.Redis(host="127.0.0.1", port=redis_port, socket_timeout=5)
        self.log = log
        self.log_lock = threading.Lock()
        self.metrics = Metrics()
        self.slow_seconds = 0.0
        self.served = 0
        self.burner: subprocess.Popen | None = None

    def burn(self, seconds: float) -> None:
        """A child that spins for at most `seconds` (in this process group: its CPU is ours)."""
        if self.burner is not None:
            self.burner.kill()
            self.burner.wait()
            self.burner = None
        if seconds > 0:
            loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
            self.burner = subprocess.Popen([sys.executable, "-c", loop])

    def failed(self, path: str, upstream: str, error: Exception) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        message = json.dumps((str(error).strip().splitlines() or [type(error).__name__])[0])
        with self.log_lock:
            self.log.write(
                f'time={stamp} level=error msg="request failed" path={path} upstream={upstream} error={message}\n'
            )


class Handler(BaseHTTPRequestHandler):
    server: Checkout

    def log_message(self, format, *args) -> None:
        pass

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/metrics":
            return self._reply(200, self.server.metrics.text(), "text/plain; version=0.0.4")
        if path == "/health":
            return self._reply(200, "ok\n")
        if path.startswith("/api/checkout/"):
            return self._checkout()
        return self._reply(404, "not found\n")

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/fault/slow":
            self.server.slow_seconds = float(parse_qs(parts.query).get("seconds", ["0"])[0])
            return self._reply(200, "ok\n")
        if parts.path == "/fault/burner":
            self.server.burn(float(parse_qs(parts.query).get("seconds", ["0"])[0]))
            return self._reply(200, "ok\n")
        if parts.path.startswith("/api/checkout/"):
            return self._checkout()
        return self._reply(404, "not found\n")

    def _checkout(self) -> None:
        began = time.monotonic()
        server = self.server
        server.served += 1
        account = 1 + server.served % 5
        code = 200
        try:
            cart = server.cache.get(f"cart:{account}")
            server.cache.set(f"cart:{account}", (cart or b"")[:512] + b"x")
            with psycopg.connect(server.postgres, autocommit=True, connect_timeout=5) as connection:
                connection.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
                connection.execute("UPDATE accounts SET balance = balance WHERE id = %s", (account,))
            if server.slow_seconds:
                time.sleep(server.slow_seconds)
        except psycopg.Error as error:
            code = 500
            server.failed(urlsplit(self.path).path, server.postgres_address, error)
        except redis.RedisError as error:
            code = 500
            server.failed(urlsplit(self.path).path, server.redis_address, error)
        self._reply(code, "ok\n" if code == 200 else "error\n")
        server.metrics.observe(code, time.monotonic() - began)

    def _reply(self, code: int, body: str, kind: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--postgres", required=True)
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--log", required=True)
    options = parser.parse_args()
    with open(options.log, "a", buffering=1) as log:
        Checkout(options.port, options.postgres, options.redis_port, log).serve_forever()


if __name__ == "__main__":
    main()
