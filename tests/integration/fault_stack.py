"""The exporter stack with an upstream of its own, `checkout` (`checkout_service`), and faults with
known causes injected into it one at a time, each bounded and on loopback (§23):

- `upstream_stopped`: the checkout process is stopped (nginx answers 502, the probe of checkout and
  its scrape target fail), then started again;
- `cpu_burner`: a busy loop in checkout's process group;
- `postgres_lock`: one session holds the row locks checkout's requests take, the others wait (past
  `lock_timeout` they fail, and checkout's error lines name PostgreSQL's address);
- `redis_full`: Redis's `maxmemory` cut and written past it (evictions);
- `slow_upstream`: checkout answers every request 1.5 s later.

Traffic is steady and fault-free otherwise: a few clients through nginx to checkout and its other
paths; Redis has room (no eviction) until a fault says otherwise. Prometheus scrapes every second.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.integration.exporter_stack import (
    LOG_FILES,
    LOKI_TENANT,
    ExporterStack,
    LogShipper,
    _configs,
    _launch,
    _Launcher,
    _postgres,
    _wait,
)
from tests.integration.exporter_traffic import Endpoints, schema_create
from tests.integration.stack import free_port
from tests.loki_server import FakeLoki

# Room enough that the traffic never evicts; the fault cuts it to FULL_MAXMEMORY.
ROOMY_MAXMEMORY = "64mb"
FULL_MAXMEMORY = 8 * 2**20
SLOW_SECONDS = 1.5
# The burner stops by itself after this long, should nobody stop it.
BURNER_BOUND = 300
CLIENTS = 3
# Seconds between one client's requests.
PACE = 0.3
CHECKOUT_PATH = "/api/checkout/pay"
# Checkout's own error lines (the upstream each failed request failed on), shipped as its job's.
CHECKOUT_LOG = "checkout.log"
NGINX_CHECKOUT = """
    upstream checkout { server 127.0.0.1:%(checkout)d; }
    server {"""
NGINX_CHECKOUT_LOCATION = """
        location /api/checkout/ { proxy_pass http://checkout; proxy_read_timeout 10s; }
        location /static/"""
CHECKOUT_JOB = """
  - job_name: checkout
    static_configs: [{targets: ["127.0.0.1:%(checkout)d"]}]
"""


@dataclass
class FaultStack:
    stack: ExporterStack
    endpoints: Endpoints
    checkout: subprocess.Popen | None = None
    traffic: Traffic | None = None

    @property
    def port(self) -> int:
        return self.stack.ports["checkout"]

    @property
    def checkout_address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def probe_url(self) -> str:
        return f"http://{self.checkout_address}/health"

    def start_checkout(self) -> None:
        postgres = self.endpoints.postgres
        dsn = f"postgresql://{postgres['user']}@{postgres['host']}:{postgres['port']}/{postgres['dbname']}"
        start = _Launcher(self.stack)
        self.checkout = start(
            "checkout",
            [sys.executable, "-m", "tests.integration.checkout_service", "--port", str(self.port),
             "--postgres", dsn, "--redis-port", str(self.endpoints.redis_port),
             "--log", str(self.stack.folder / CHECKOUT_LOG)],
            cwd=Path(__file__).resolve().parents[2], start_new_session=True,
        )  # fmt: skip
        _wait(self.stack, "checkout", lambda: httpx2.get(self.probe_url(), timeout=2).status_code == 200)

    def stop(self) -> None:
        if self.traffic is not None:
            self.traffic.stop()
        self.stack.stop()

    # --- The faults: each a context manager, the fault held inside it and undone after. ---------

    @contextmanager
    def upstream_stopped(self) -> Iterator[None]:
        self.checkout.terminate()
        self.checkout.wait(timeout=10)
        # Stopped on purpose: not a process that died under the stack.
        self.stack.started = [s for s in self.stack.started if s.process is not self.checkout]
        try:
            yield
        finally:
            self.start_checkout()

    @contextmanager
    def cpu_burner(self) -> Iterator[None]:
        httpx2.post(f"http://{self.checkout_address}/fault/burner", params={"seconds": BURNER_BOUND})
        try:
            yield
        finally:
            httpx2.post(f"http://{self.checkout_address}/fault/burner", params={"seconds": 0})

    @contextmanager
    def postgres_lock(self) -> Iterator[None]:
        holder = self.endpoints.connect()
        try:
            holder.execute("BEGIN")
            holder.execute("SELECT * FROM accounts WHERE id <= 5 FOR UPDATE")
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()

    @contextmanager
    def redis_full(self) -> Iterator[None]:
        cache = self.endpoints.cache()
        cache.config_set("maxmemory", FULL_MAXMEMORY)
        stopping = threading.Event()

        def write() -> None:
            index = 0
            while not stopping.wait(0.05):
                pipeline = cache.pipeline(transaction=False)
                for _ in range(100):
                    pipeline.set(f"fill:{index}", "x" * 1024)
                    index += 1
                pipeline.execute()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            yield
        finally:
            stopping.set()
            writer.join(timeout=10)
            cache.config_set("maxmemory", ROOMY_MAXMEMORY)
            for keys in _batched(cache.scan_iter("fill:*", count=1000)):
                cache.delete(*keys)
            cache.close()

    @contextmanager
    def slow_upstream(self) -> Iterator[None]:
        httpx2.post(f"http://{self.checkout_address}/fault/slow", params={"seconds": SLOW_SECONDS})
        try:
            yield
        finally:
            httpx2.post(f"http://{self.checkout_address}/fault/slow", params={"seconds": 0})


def _batched(keys, size: int = 1000):
    batch = []
    for key in keys:
        batch.append(key)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Traffic(threading.Thread):
    """CLIENTS clients, each a request to checkout through nginx and one to nginx itself every PACE s."""

    def __init__(self, nginx_url: str) -> None:
        super().__init__(name="fault-stack-traffic", daemon=True)
        self.nginx_url = nginx_url
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)

    def run(self) -> None:
        clients = [threading.Thread(target=self._client, daemon=True) for _ in range(CLIENTS)]
        for client in clients:
            client.start()
        for client in clients:
            client.join()

    def _client(self) -> None:
        with httpx2.Client(base_url=self.nginx_url, timeout=15) as client:
            while not self.stopping.wait(PACE):
                try:
                    client.post(CHECKOUT_PATH)
                    client.get("/api/catalog/items")
                except httpx2.HTTPError:
                    pass


def _fault_configs(stack: ExporterStack, checkout_probe: str) -> None:
    """The exporter stack's configuration, with checkout behind nginx, probed and scraped."""
    _configs(stack)
    ports = stack.ports
    nginx = stack.folder / "nginx" / "nginx.conf"
    text = nginx.read_text().replace("\n    server {", NGINX_CHECKOUT % ports, 1)
    nginx.write_text(text.replace("\n        location /static/", NGINX_CHECKOUT_LOCATION, 1))
    prometheus = stack.folder / "prometheus.yml"
    probes = json.dumps(list(stack.probe_urls().values()))
    text = prometheus.read_text().replace(probes, json.dumps([f"{stack.nginx_url}/healthz", checkout_probe]))
    prometheus.write_text(text.rstrip("\n") + CHECKOUT_JOB % ports)


def fault_stack_start() -> FaultStack:
    folder = Path(tempfile.mkdtemp(prefix="fault-stack-"))
    folder.chmod(0o755)
    names = ("nginx", "payments", "checkout", "postgres", "redis", "node", "nginx_exporter",
             "postgres_exporter", "redis_exporter", "blackbox", "prometheus", "alertmanager")  # fmt: skip
    loki = FakeLoki([], tenant=LOKI_TENANT).__enter__()
    stack = ExporterStack(folder=folder, ports={name: free_port() for name in names}, loki=loki)
    endpoints = Endpoints(
        nginx_url=stack.nginx_url,
        prometheus_url=stack.prometheus_url,
        postgres={"host": "127.0.0.1", "port": stack.ports["postgres"], "user": "postgres", "dbname": "shop"},
        redis_port=stack.ports["redis"],
    )
    faults = FaultStack(stack=stack, endpoints=endpoints)
    try:
        _fault_configs(stack, faults.probe_url())
        start = _Launcher(stack)
        _launch(stack, start, maxmemory=ROOMY_MAXMEMORY)
        _postgres(stack, start)
        stack.shipper = LogShipper(
            loki.url,
            [
                ({"job": job, "filename": str(folder / name)}, folder / name)
                for job, name in (*LOG_FILES, ("checkout", CHECKOUT_LOG))
            ],
        )
        stack.shipper.start()
        _wait(stack, "PostgreSQL", lambda: endpoints.connect(dbname="postgres").close() is None)
        schema_create(endpoints)
        faults.start_checkout()
        _wait(stack, "the first scrape of every exporter and checkout", lambda: all(
            stack.query(metric) for metric in (
                "redis_memory_used_bytes", "nginx_http_requests_total", "probe_success",
                "node_cpu_seconds_total", 'pg_up', 'process_cpu_seconds_total{job="checkout"}',
            )
        ))  # fmt: skip
        faults.traffic = Traffic(stack.nginx_url)
        faults.traffic.start()
    except BaseException:
        faults.stop()
        raise
    return faults


def main() -> None:
    """Start it, print the settings, and hold it until SIGTERM or Ctrl-C (for trying questions)."""
    faults = fault_stack_start()
    try:
        for name, value in faults.stack.settings().items():
            print(f"DIAGNOSIS_{name}={value}")
        print(f"nginx {faults.stack.nginx_url} checkout {faults.checkout_address}", flush=True)
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        with suppress(KeyboardInterrupt):
            stopping.wait(float(os.environ.get("FAULT_STACK_SECONDS", "3600")))
    finally:
        faults.stop()


if __name__ == "__main__":
    main()
