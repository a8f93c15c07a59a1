"""Debian's real Prometheus, Alertmanager and node_exporter on free 127.0.0.1 ports, with temporary
config and data directories and alert rules that fire within seconds; `team_sources_running` adds
the test Loki server over the second world's lines, as a team's sources for a command to read."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.loki_server import FakeLoki

BINARIES = {
    "prometheus": "prometheus",
    "alertmanager": "prometheus-alertmanager",
    "node_exporter": "prometheus-node-exporter",
}
START_TIMEOUT = 60.0

# Two scrape jobs of one node_exporter give the second world two services: `ledger-service` and
# `billing` (no `-service` suffix). A third job scrapes a closed port: a target that is down. A fourth
# scrapes it as most teams do, `job="node"` and `instance` only: no `service` label on its series. A
# fifth is Prometheus scraping itself: its own request counters and latency histograms.
PROMETHEUS_CONFIG = """
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [{rules}]
alerting:
  alertmanagers:
    - static_configs: [{{targets: ["127.0.0.1:{alertmanager_port}"]}}]
scrape_configs:
  - job_name: ledger-node
    static_configs: [{{targets: ["127.0.0.1:{node_port}"], labels: {{service: ledger-service}}}}]
  - job_name: billing-node
    static_configs: [{{targets: ["127.0.0.1:{node_port}"], labels: {{service: billing}}}}]
  - job_name: payments-exporter
    static_configs: [{{targets: ["127.0.0.1:{closed_port}"], labels: {{service: payments}}}}]
  - job_name: node
    static_configs: [{{targets: ["127.0.0.1:{node_port}"]}}]
  - job_name: prometheus
    static_configs: [{{targets: ["127.0.0.1:{prometheus_port}"]}}]
"""
RULES = """
groups:
  - name: second-world
    interval: 1s
    rules:
      - alert: HighMemoryUsage
        expr: node_memory_MemTotal_bytes{service="ledger-service"} > 0
        for: 0s
        labels: {severity: warning}
        annotations: {description: "Memory of the ledger host is under pressure"}
      - alert: PostgresReplicationLag
        expr: node_memory_MemTotal_bytes{service="billing"} > 0
        for: 0s
        labels: {severity: critical}
        annotations:
          summary: "Replica is behind the primary"
          runbook_url: "https://wiki.example.org/runbooks/PostgresReplicationLag"
      - alert: KubePodCrashLooping
        expr: node_load1{service="billing"} >= 0
        for: 0s
        labels: {severity: warning}
        annotations: {description: "Pod of billing restarts repeatedly"}
      - alert: NodeFilesystemAlmostFull
        expr: node_filesystem_avail_bytes{service="billing"} >= 0
        for: 1h
        labels: {severity: info}
      # Flaps: fires for 20 s, resolves for 20 s, fires again (a new activeAt each time).
      - alert: DbConnectionsSaturated
        expr: vector(time() % 40) < 20
        for: 0s
        labels: {service: billing, severity: warning}
        annotations: {summary: "Database connections of billing saturated"}
"""
ALERTMANAGER_CONFIG = """
route: {receiver: blackhole, group_wait: 1s, group_interval: 1s}
receivers: [{name: blackhole}]
"""
NODE_COLLECTORS = ("meminfo", "loadavg", "filesystem", "cpu")
RETENTION = "2d"
WORLD = Path(__file__).resolve().parents[1] / "world"
LOKI_TENANT = "team-a"
# Long enough for a flapping rule to flap and for range queries to have points.
SETTLE_SECONDS = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def missing_binaries() -> list[str]:
    return [package for package, binary in BINARIES.items() if shutil.which(binary) is None]


@dataclass
class Stack:
    prometheus_url: str
    alertmanager_url: str
    node_exporter_url: str
    processes: list[subprocess.Popen]
    logs: Path

    def prometheus(self, path: str, **params) -> dict:
        response = httpx2.get(f"{self.prometheus_url}{path}", params=params, timeout=10)
        response.raise_for_status()
        return response.json()["data"]

    def alert(self, name: str) -> dict:
        groups = self.prometheus("/api/v1/rules", type="alert")["groups"]
        rule = next(r for g in groups for r in g["rules"] if r["name"] == name)
        return {**rule["alerts"][0], "expr": rule["query"]}

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _start(command: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)


def _wait(what: str, probe, logs: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except (httpx2.HTTPError, KeyError, IndexError, StopIteration, ValueError):
            pass
        time.sleep(0.3)
    tails = {p.name: p.read_text(errors="replace")[-2000:] for p in logs.glob("*.log")}
    raise RuntimeError(f"{what} not ready within {START_TIMEOUT}s: {json.dumps(tails, indent=1)}")


def stack_start(directory: Path) -> Stack:
    node_port, prometheus_port, alertmanager_port = free_port(), free_port(), free_port()
    (directory / "rules.yml").write_text(RULES)
    (directory / "prometheus.yml").write_text(
        PROMETHEUS_CONFIG.format(
            rules=directory / "rules.yml",
            alertmanager_port=alertmanager_port,
            node_port=node_port,
            prometheus_port=prometheus_port,
            # Free now and nothing will listen on it: every scrape is refused.
            closed_port=free_port(),
        )
    )
    (directory / "alertmanager.yml").write_text(ALERTMANAGER_CONFIG)
    processes = [
        _start(
            [
                BINARIES["node_exporter"],
                f"--web.listen-address=127.0.0.1:{node_port}",
                "--collector.disable-defaults",
                *(f"--collector.{name}" for name in NODE_COLLECTORS),
            ],
            directory / "node_exporter.log",
        ),
        _start(
            [
                BINARIES["alertmanager"],
                f"--config.file={directory / 'alertmanager.yml'}",
                f"--storage.path={directory / 'alertmanager-data'}",
                f"--web.listen-address=127.0.0.1:{alertmanager_port}",
                "--cluster.listen-address=",
            ],
            directory / "alertmanager.log",
        ),
        _start(
            [
                BINARIES["prometheus"],
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}",
                # Shorter than a week: "上周" asks beyond what the server keeps.
                f"--storage.tsdb.retention.time={RETENTION}",
            ],
            directory / "prometheus.log",
        ),
    ]
    stack = Stack(
        prometheus_url=f"http://127.0.0.1:{prometheus_port}",
        alertmanager_url=f"http://127.0.0.1:{alertmanager_port}",
        node_exporter_url=f"http://127.0.0.1:{node_port}",
        processes=processes,
        logs=directory,
    )
    try:
        _wait(
            "the alerts firing in Prometheus",
            lambda: (
                stack.alert("KubePodCrashLooping")["state"] == "firing"
                and stack.alert("HighMemoryUsage")["state"] == "firing"
                and stack.alert("PostgresReplicationLag")["state"] == "firing"
            ),
            directory,
        )

        def alertmanager_has_them() -> bool:
            alerts = httpx2.get(f"{stack.alertmanager_url}/api/v2/alerts", timeout=5).json()
            return {"HighMemoryUsage", "PostgresReplicationLag", "KubePodCrashLooping"} <= {
                a["labels"]["alertname"] for a in alerts
            }

        _wait("the alerts in Alertmanager", alertmanager_has_them, directory)
    except BaseException:
        stack.stop()
        raise
    return stack


def silence(stack: Stack, alert_name: str) -> str:
    response = httpx2.post(
        f"{stack.alertmanager_url}/api/v2/silences",
        json={
            "matchers": [{"name": "alertname", "value": alert_name, "isRegex": False, "isEqual": True}],
            "startsAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60)),
            "endsAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)),
            "createdBy": "tests",
            "comment": "maintenance",
        },
        timeout=5,
    )
    response.raise_for_status()
    return response.json()["silenceID"]


@contextmanager
def team_sources_running(settle_seconds: float = SETTLE_SECONDS) -> Iterator[list[str]]:
    """The stack and the test Loki server running, after `settle_seconds`: yields the source options of
    `manage.py eval_record` and `manage.py llm_real` that point at them (with the world's runbooks and
    vocabulary); stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="team-sources-") as folder:
        stack = stack_start(Path(folder))
        try:
            time.sleep(settle_seconds)
            streams = json.loads((WORLD / "loki_streams.json").read_text())
            with FakeLoki(streams, tenant=LOKI_TENANT) as loki:
                yield [
                    "--prometheus", stack.prometheus_url,
                    "--alertmanager", stack.alertmanager_url,
                    "--loki", loki.url,
                    "--loki-tenant", LOKI_TENANT,
                    "--runbooks", str(WORLD / "runbooks"),
                    "--vocabulary", str(WORLD / "vocabulary.json"),
                ]  # fmt: skip
        finally:
            stack.stop()
