"""The exporter stack: real software nobody here wrote, from Debian, watched as teams watch it.

nginx (a good location, an upstream that refuses for `/api/payments/`, paths that 404, access and
error logs), PostgreSQL 15 (its own cluster by `initdb` in a temporary folder, `max_connections` 20,
`log_min_duration_statement` on, a `shop` database), redis-server (4 MB `maxmemory`, allkeys-lru);
the nginx, postgres, redis, blackbox (one probe up, one down) and node exporters; Prometheus scraping
all of them and itself, with the alert rules of `exporter_world/rules.yml`; Alertmanager; the log
files shipped, as a log shipper would, into the test Loki server (`tests/loki_server.py`) under
`job` labels. Every server listens on a free 127.0.0.1 port; `exporter_stack_start` returns once the
traffic of `exporter_traffic` has made the alerts fire, and `ExporterStack.stop` ends every process
it started (also when the start fails; a process whose test runner dies gets SIGTERM from the kernel).

    python -m tests.integration.exporter_stack [--minutes 30]

starts it, prints the sources as `DIAGNOSIS_*` settings and the start-up time, and stops it after
that many minutes or on Ctrl-C.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import psycopg
import yaml

from tests.integration import exporter_traffic
from tests.integration.exporter_traffic import Endpoints, Trickle
from tests.integration.stack import START_TIMEOUT, free_port
from tests.loki_server import FakeLoki

WORLD = Path(__file__).resolve().parent / "exporter_world"
RULES = WORLD / "rules.yml"
RUNBOOKS = WORLD / "runbooks"
# Debian package → the program it installs (PostgreSQL's own programs are found in its versioned folder).
BINARIES = {
    "prometheus": "prometheus",
    "prometheus-alertmanager": "prometheus-alertmanager",
    "prometheus-node-exporter": "prometheus-node-exporter",
    "nginx": "nginx",
    "redis-server": "redis-server",
    "prometheus-nginx-exporter": "prometheus-nginx-exporter",
    "prometheus-postgres-exporter": "prometheus-postgres-exporter",
    "prometheus-redis-exporter": "prometheus-redis-exporter",
    "prometheus-blackbox-exporter": "prometheus-blackbox-exporter",
}
POSTGRES_PACKAGE = "postgresql"
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
MAX_CONNECTIONS = 20
SLOW_STATEMENT_MS = 250
REDIS_MAXMEMORY = "4mb"
LOKI_TENANT = "shop"
# Public rule files (e.g. a checkout of awesome-prometheus-alerts' dist/rules) loaded beside the
# stack's own, their `for:` cut to at most FOR_CUT so they fire within the tests' time.
PUBLIC_RULES_VARIABLE = "EXPORTER_STACK_PUBLIC_RULES"
FOR_CUT = "10s"
# The alerts the traffic makes fire: the stack is ready when Prometheus and Alertmanager both have them.
FIRING = (
    "Watchdog",
    "BlackboxProbeFailed",
    "PostgresDeadlocksDetected",
    "PostgresHighRollbackRate",
    "PostgresTooManyConnections",
    "RedisEvictingKeys",
    "RedisOutOfConfiguredMaxmemory",
)
# Log files as a shipper reads them: (job label, file name in the stack's folder).
LOG_FILES = (
    ("nginx", "nginx/access.log"),
    ("nginx", "nginx/error.log"),
    ("postgres", "postgres.log"),
    ("redis", "redis.log"),
)
TRICKLE_SECONDS = 3600.0

NGINX_CONFIG = """
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {folder}/access.log combined;
    client_body_temp_path {folder}/tmp/body;
    proxy_temp_path {folder}/tmp/proxy;
    fastcgi_temp_path {folder}/tmp/fastcgi;
    uwsgi_temp_path {folder}/tmp/uwsgi;
    scgi_temp_path {folder}/tmp/scgi;
    upstream payments {{ server 127.0.0.1:{payments_port}; }}
    server {{
        listen 127.0.0.1:{port};
        server_name shop.local;
        root {folder}/html;
        location = / {{ return 200 "shop\\n"; }}
        location = /healthz {{ return 200 "ok\\n"; }}
        location /api/catalog/ {{ default_type application/json; return 200 '{{"items": []}}\\n'; }}
        location /api/payments/ {{ proxy_pass http://payments; }}
        location /static/ {{ }}
        location = /stub_status {{ stub_status; access_log off; }}
    }}
}}
"""
BLACKBOX_CONFIG = """
modules:
  http_2xx:
    prober: http
    timeout: 2s
    http: {preferred_ip_protocol: ip4}
"""
PROMETHEUS_CONFIG = """
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: {rules}
alerting:
  alertmanagers:
    - static_configs: [{{targets: ["127.0.0.1:{alertmanager}"]}}]
scrape_configs:
  - job_name: prometheus
    static_configs: [{{targets: ["127.0.0.1:{prometheus}"]}}]
  - job_name: alertmanager
    static_configs: [{{targets: ["127.0.0.1:{alertmanager}"]}}]
  - job_name: node
    static_configs: [{{targets: ["127.0.0.1:{node}"]}}]
  - job_name: nginx
    static_configs: [{{targets: ["127.0.0.1:{nginx_exporter}"]}}]
  - job_name: postgres
    static_configs: [{{targets: ["127.0.0.1:{postgres_exporter}"]}}]
  - job_name: redis
    static_configs: [{{targets: ["127.0.0.1:{redis_exporter}"]}}]
  - job_name: blackbox
    metrics_path: /probe
    params: {{module: [http_2xx]}}
    static_configs: [{{targets: {probes}}}]
    relabel_configs:
      - {{source_labels: [__address__], target_label: __param_target}}
      - {{source_labels: [__param_target], target_label: instance}}
      - {{target_label: __address__, replacement: "127.0.0.1:{blackbox}"}}
"""
ALERTMANAGER_CONFIG = """
route: {receiver: blackhole, group_by: [alertname], group_wait: 1s, group_interval: 1s}
receivers: [{name: blackhole}]
"""
NODE_COLLECTORS = (
    "cpu",
    "diskstats",
    "filesystem",
    "loadavg",
    "meminfo",
    "netdev",
    "stat",
    "uname",
    "vmstat",
)


def postgres_binary(name: str) -> str | None:
    """`initdb` / `postgres` of the newest PostgreSQL Debian installed (they are not on PATH)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else shutil.which(name, path=SEARCH_PATH)


def missing_packages() -> list[str]:
    missing = [package for package, binary in BINARIES.items() if not shutil.which(binary, path=SEARCH_PATH)]
    if not (postgres_binary("initdb") and postgres_binary("postgres")):
        missing.append(POSTGRES_PACKAGE)
    return missing


def _die_with_parent(signal_number: int):
    """Run in the child before exec: the kernel sends it `signal_number` when the parent dies."""

    def arm() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal_number)  # PR_SET_PDEATHSIG

    return arm


@dataclass
class Started:
    name: str
    process: subprocess.Popen
    # What stops it quickly: PostgreSQL's fast shutdown is SIGINT (SIGTERM waits for clients).
    stop_signal: int = signal.SIGTERM


@dataclass
class ExporterStack:
    folder: Path
    ports: dict[str, int]
    loki: FakeLoki
    started: list[Started] = field(default_factory=list)
    endpoints: Endpoints | None = None
    trickle: Trickle | None = None
    shipper: LogShipper | None = None
    start_seconds: float = 0.0

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['prometheus']}"

    @property
    def alertmanager_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['alertmanager']}"

    @property
    def nginx_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['nginx']}"

    def probe_urls(self) -> dict[str, str]:
        """The blackbox exporter's targets: the one that answers and the one that fails."""
        return {"up": f"{self.nginx_url}/healthz", "down": f"{self.nginx_url}/api/payments/health"}

    def log_path(self, name: str) -> Path:
        return self.folder / name

    def log_text(self, name: str) -> str:
        """The log file's whole lines as they are now, once the shipper has pushed them to Loki."""
        path = self.log_path(name)
        whole = whole_lines(path.read_bytes())
        if self.shipper is not None:
            self.shipper.wait_pushed(path, len(whole))
        return whole.decode(errors="replace")

    def settings(self) -> dict[str, str]:
        """The stack as the product's `DIAGNOSIS_*` settings."""
        return {
            "PROMETHEUS_URL": self.prometheus_url,
            "ALERTMANAGER_URL": self.alertmanager_url,
            "LOKI_URL": self.loki.url,
            "LOKI_TENANT": LOKI_TENANT,
            "RUNBOOKS_DIR": str(RUNBOOKS),
        }

    def prometheus(self, path: str, **params) -> dict:
        response = httpx2.get(f"{self.prometheus_url}{path}", params=params, timeout=10)
        response.raise_for_status()
        return response.json()["data"]

    def query(self, promql: str) -> list[dict]:
        return self.prometheus("/api/v1/query", query=promql)["result"]

    def rule(self, name: str) -> dict:
        groups = self.prometheus("/api/v1/rules", type="alert")["groups"]
        return next(rule for group in groups for rule in group["rules"] if rule["name"] == name)

    def alertmanager_alerts(self) -> list[dict]:
        response = httpx2.get(f"{self.alertmanager_url}/api/v2/alerts", timeout=10)
        response.raise_for_status()
        return response.json()

    def firing(self) -> set[str]:
        groups = self.prometheus("/api/v1/rules", type="alert")["groups"]
        return {rule["name"] for group in groups for rule in group["rules"] if rule["state"] == "firing"}

    def stop(self) -> None:
        """Stop the traffic and the shipper, then every process this stack started, newest first."""
        if self.trickle is not None:
            self.trickle.stop()
        if self.endpoints is not None:
            self.endpoints.close()
        if self.shipper is not None:
            self.shipper.stop()
        for started in reversed(self.started):
            if started.process.poll() is None:
                started.process.send_signal(started.stop_signal)
        for started in reversed(self.started):
            try:
                started.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                started.process.kill()
                started.process.wait()
        self.loki.__exit__(None, None, None)
        shutil.rmtree(self.folder, ignore_errors=True)

    def failure(self, what: str) -> str:
        """What failed, with the end of every server's log."""
        tails = {
            path.name: path.read_text(errors="replace")[-1500:]
            for path in self.folder.rglob("*.log")
            if path.is_file()
        }
        exited = {s.name: s.process.returncode for s in self.started if s.process.poll() is not None}
        return f"{what}; exited: {exited}; logs: {json.dumps(tails, indent=1)}"


def whole_lines(data: bytes) -> bytes:
    """The data up to its last line break: a line still being written is not read yet."""
    return data[: data.rfind(b"\n") + 1]


class LogShipper(threading.Thread):
    """Reads each log file's new whole lines twice a second and pushes them to Loki with the
    labels a shipper gives them (`job`, `filename`), stamped with the time they were read."""

    def __init__(self, loki_url: str, files: list[tuple[dict, Path]]) -> None:
        super().__init__(name="exporter-stack-shipper", daemon=True)
        self.push_url = f"{loki_url}/loki/api/v1/push"
        self.files = files
        self.offsets = {path: 0 for _, path in files}
        # How far into each file Loki has the lines: the offsets once their push succeeded.
        self.pushed = dict(self.offsets)
        self.stopping = threading.Event()
        self.shipped = 0

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)

    def run(self) -> None:
        with httpx2.Client(timeout=5, headers={"X-Scope-OrgID": LOKI_TENANT}) as client:
            while not self.stopping.wait(0.5):
                self.ship(client)

    def ship(self, client) -> None:
        streams = []
        now = time.time_ns()
        for labels, path in self.files:
            lines = self._new_lines(path)
            if lines:
                values = [[str(now + index), line] for index, line in enumerate(lines)]
                streams.append({"stream": labels, "values": values})
        if streams:
            client.post(self.push_url, json={"streams": streams}).raise_for_status()
            self.shipped += sum(len(stream["values"]) for stream in streams)
        self.pushed = dict(self.offsets)

    def wait_pushed(self, path: Path, offset: int, *, timeout: float = 15.0) -> None:
        """Until Loki has the file's lines up to `offset` (a reader's count through Loki then holds at
        least what it read): the shipper reads twice a second, later on a loaded machine."""
        deadline = time.monotonic() + timeout
        while self.pushed.get(path, 0) < offset:
            if time.monotonic() > deadline or not self.is_alive():
                raise AssertionError(f"{path}: lines up to byte {offset} not in Loki after {timeout} s")
            time.sleep(0.05)

    def _new_lines(self, path: Path) -> list[str]:
        if not path.exists():
            return []
        with path.open("rb") as handle:
            handle.seek(self.offsets[path])
            whole = whole_lines(handle.read())
        self.offsets[path] += len(whole)
        return [line for line in whole.decode(errors="replace").splitlines() if line.strip()]


def public_rules(folder: Path, into: Path) -> list[Path]:
    """The public rule files in `folder`, copied into `into` with every `for:` cut to `FOR_CUT`."""
    written = []
    for source in sorted(folder.glob("*.yml")):
        document = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
        for group in document.get("groups") or []:
            group["interval"] = "1s"
            for rule in group.get("rules") or []:
                if "for" in rule:
                    rule["for"] = FOR_CUT
        target = into / f"public-{source.name}"
        target.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        written.append(target)
    return written


def _as_postgres(folder: Path) -> dict:
    """Popen arguments that run PostgreSQL's programs as the `postgres` user when we are root (they
    refuse to run as root), owning `folder`."""
    if os.geteuid() != 0:
        return {"cwd": folder}
    account = pwd.getpwnam("postgres")
    os.chown(folder, account.pw_uid, account.pw_gid)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": [], "cwd": folder}


def _wait(stack: ExporterStack, what: str, probe, *, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except (httpx2.HTTPError, psycopg.Error, OSError, KeyError, IndexError, StopIteration, ValueError):
            pass
        if exited := [s.name for s in stack.started if s.process.poll() is not None]:
            raise RuntimeError(stack.failure(f"{', '.join(exited)} exited while waiting for {what}"))
        time.sleep(0.3)
    raise RuntimeError(stack.failure(f"{what} not within {timeout:.0f}s"))


class _Launcher:
    def __init__(self, stack: ExporterStack) -> None:
        self.stack = stack

    def __call__(
        self, name: str, command: list[str], *, stop_signal=signal.SIGTERM, env=None, output=None, **popen
    ):
        """Start `command`, its output in `output` (default `<name>.out` in the stack's folder)."""
        log = (output or self.stack.folder / f"{name}.out").open("w")
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            preexec_fn=_die_with_parent(stop_signal),
            **popen,
        )
        log.close()
        self.stack.started.append(Started(name, process, stop_signal))
        return process


def _configs(stack: ExporterStack) -> None:
    folder, ports = stack.folder, stack.ports
    nginx = folder / "nginx"
    for sub in ("tmp", "html/static"):
        (nginx / sub).mkdir(parents=True)
    (nginx / "html" / "static" / "app.css").write_text("body { margin: 0 }\n")
    (nginx / "nginx.conf").write_text(
        NGINX_CONFIG.format(folder=nginx, port=ports["nginx"], payments_port=ports["payments"])
    )
    (folder / "blackbox.yml").write_text(BLACKBOX_CONFIG)
    (folder / "alertmanager.yml").write_text(ALERTMANAGER_CONFIG)
    rules = [RULES]
    if public := os.environ.get(PUBLIC_RULES_VARIABLE):
        rules += public_rules(Path(public), folder)
    probes = json.dumps(list(stack.probe_urls().values()))
    (folder / "prometheus.yml").write_text(
        PROMETHEUS_CONFIG.format(
            rules=json.dumps([str(path) for path in rules]),
            probes=probes,
            **ports,
        )
    )


def _launch(stack: ExporterStack, start, *, maxmemory: str = REDIS_MAXMEMORY) -> None:
    folder, ports = stack.folder, stack.ports
    start(
        "nginx",
        [
            shutil.which("nginx", path=SEARCH_PATH),
            "-p",
            str(folder / "nginx"),
            "-c",
            str(folder / "nginx" / "nginx.conf"),
            "-e",
            str(folder / "nginx" / "error.log"),
        ],
    )
    start(
        "redis",
        [
            BINARIES["redis-server"],
            "--bind",
            "127.0.0.1",
            "--port",
            str(ports["redis"]),
            "--maxmemory",
            maxmemory,
            "--maxmemory-policy",
            "allkeys-lru",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
            "--logfile",
            str(folder / "redis.log"),
            "--daemonize",
            "no",
        ],
    )
    start(
        "node_exporter",
        [
            BINARIES["prometheus-node-exporter"],
            f"--web.listen-address=127.0.0.1:{ports['node']}",
            "--collector.disable-defaults",
            *(f"--collector.{c}" for c in NODE_COLLECTORS),
        ],
    )
    start(
        "nginx_exporter",
        [
            BINARIES["prometheus-nginx-exporter"],
            f"-nginx.scrape-uri={stack.nginx_url}/stub_status",
            f"-web.listen-address=127.0.0.1:{ports['nginx_exporter']}",
        ],
    )
    start(
        "redis_exporter",
        [
            BINARIES["prometheus-redis-exporter"],
            f"-redis.addr=redis://127.0.0.1:{ports['redis']}",
            f"-web.listen-address=127.0.0.1:{ports['redis_exporter']}",
        ],
    )
    start(
        "postgres_exporter",
        [
            BINARIES["prometheus-postgres-exporter"],
            f"--web.listen-address=127.0.0.1:{ports['postgres_exporter']}",
        ],
        env={"DATA_SOURCE_NAME": f"postgresql://postgres@127.0.0.1:{ports['postgres']}/shop?sslmode=disable"},
    )
    start(
        "blackbox_exporter",
        [
            BINARIES["prometheus-blackbox-exporter"],
            f"--config.file={folder / 'blackbox.yml'}",
            f"--web.listen-address=127.0.0.1:{ports['blackbox']}",
        ],
    )
    start(
        "alertmanager",
        [
            BINARIES["prometheus-alertmanager"],
            f"--config.file={folder / 'alertmanager.yml'}",
            f"--storage.path={folder / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{ports['alertmanager']}",
            "--cluster.listen-address=",
        ],
    )
    start(
        "prometheus",
        [
            BINARIES["prometheus"],
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'prometheus-data'}",
            f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
            "--storage.tsdb.retention.time=1d",
            "--rules.alert.resend-delay=1s",
        ],
    )


def _postgres(stack: ExporterStack, start) -> None:
    """Its own cluster: initdb, then the server in the foreground (its PID is ours to stop)."""
    cluster = stack.folder / "postgres"
    cluster.mkdir(mode=0o700)
    as_postgres = _as_postgres(cluster)
    subprocess.run(
        [postgres_binary("initdb"), "-D", str(cluster), "-U", "postgres", "--auth=trust", "-E", "UTF8",
         "--locale=C", "--no-sync", "--no-instructions"],
        check=True, capture_output=True, preexec_fn=_die_with_parent(signal.SIGTERM), **as_postgres,
    )  # fmt: skip
    settings = {
        "listen_addresses": "127.0.0.1",
        "port": stack.ports["postgres"],
        "unix_socket_directories": str(cluster),
        "max_connections": MAX_CONNECTIONS,
        "log_min_duration_statement": SLOW_STATEMENT_MS,
        "log_line_prefix": "%m [%p] %q%u@%d ",
        "log_lock_waits": "on",
        "deadlock_timeout": "100ms",
        "lc_messages": "C",
        "log_timezone": "UTC",
        "fsync": "off",
        "synchronous_commit": "off",
        "full_page_writes": "off",
        "shared_buffers": "16MB",
    }
    options = [part for name, value in settings.items() for part in ("-c", f"{name}={value}")]
    start("postgres", [postgres_binary("postgres"), "-D", str(cluster), *options],
          stop_signal=signal.SIGINT, output=stack.folder / "postgres.log", **as_postgres)  # fmt: skip


def exporter_stack_start(*, trickle_seconds: float = TRICKLE_SECONDS) -> ExporterStack:
    began = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="exporter-stack-"))
    # PostgreSQL runs as its own user: it must reach its folder inside ours.
    folder.chmod(0o755)
    names = ("nginx", "payments", "postgres", "redis", "node", "nginx_exporter", "postgres_exporter",
             "redis_exporter", "blackbox", "prometheus", "alertmanager")  # fmt: skip
    loki = FakeLoki([], tenant=LOKI_TENANT).__enter__()
    stack = ExporterStack(folder=folder, ports={name: free_port() for name in names}, loki=loki)
    try:
        _configs(stack)
        start = _Launcher(stack)
        _launch(stack, start)
        _postgres(stack, start)
        stack.shipper = LogShipper(
            loki.url,
            [({"job": job, "filename": str(folder / name)}, folder / name) for job, name in LOG_FILES],
        )
        stack.shipper.start()
        stack.endpoints = Endpoints(
            nginx_url=stack.nginx_url,
            prometheus_url=stack.prometheus_url,
            postgres={
                "host": "127.0.0.1",
                "port": stack.ports["postgres"],
                "user": "postgres",
                "dbname": "shop",
            },
            redis_port=stack.ports["redis"],
        )
        _wait(stack, "PostgreSQL", lambda: stack.endpoints.connect(dbname="postgres").close() is None)
        exporter_traffic.schema_create(stack.endpoints)
        # Counters must have a sample before the traffic, or `increase()` sees no change.
        _wait(stack, "the first scrape of every exporter", lambda: all(
            stack.query(metric) for metric in (
                'pg_stat_database_deadlocks{datname="shop"}', "redis_evicted_keys_total",
                "nginx_http_requests_total", "probe_success", "node_cpu_seconds_total",
            )
        ))  # fmt: skip
        exporter_traffic.burst(stack.endpoints, max_connections=MAX_CONNECTIONS)
        stack.trickle = Trickle(stack.endpoints, max_seconds=trickle_seconds)
        stack.trickle.start()
        _wait(stack, f"the alerts {', '.join(FIRING)} firing", lambda: set(FIRING) <= stack.firing())
        _wait(stack, "the alerts in Alertmanager", lambda: set(FIRING) <= {
            alert["labels"]["alertname"] for alert in stack.alertmanager_alerts()
        })  # fmt: skip
    except BaseException:
        stack.stop()
        raise
    stack.start_seconds = time.monotonic() - began
    return stack


@contextmanager
def exporter_stack_running(**options) -> Iterator[ExporterStack]:
    stack = exporter_stack_start(**options)
    try:
        yield stack
    finally:
        stack.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="stop by itself after this many minutes")
    minutes = parser.parse_args().minutes
    if missing := missing_packages():
        sys.exit(f"Debian packages missing: {', '.join(missing)} (`make sources-stack` installs them)")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    with exporter_stack_running(trickle_seconds=minutes * 60) as stack:
        print(f"exporter stack ready in {stack.start_seconds:.1f} s (folder {stack.folder})")
        for name, value in stack.settings().items():
            print(f"DIAGNOSIS_{name}={value}")
        print(f"nginx {stack.nginx_url}  probes {stack.probe_urls()}")
        print(f"stops after {minutes:g} minutes or on Ctrl-C", flush=True)
        with suppress(KeyboardInterrupt):
            stopping.wait(minutes * 60)


if __name__ == "__main__":
    main()
