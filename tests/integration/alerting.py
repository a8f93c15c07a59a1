"""Real Prometheus, Alertmanager and node_exporter wired to the webhook of a live test server.

Built from `tests.integration.stack`'s parts. node_exporter's textfile collector serves a switch
metric the test writes, so its rule fires, resolves and fires again (a new `startsAt`) when the
test says; a second rule on node_exporter's own `node_load1` fires with only instance and job
labels. Alertmanager posts every group to the webhook with a bearer token, resolved notices
included, and re-sends within seconds (short group_wait, group_interval, repeat_interval).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.integration.stack import BINARIES, Stack, _start, _wait, free_port

SWITCH_METRIC = "aiops_test_checkout_errors"
PROMETHEUS_CONFIG = """
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: [{rules}]
alerting:
  alertmanagers:
    - static_configs: [{{targets: ["127.0.0.1:{alertmanager_port}"]}}]
scrape_configs:
  - job_name: node
    static_configs: [{{targets: ["127.0.0.1:{node_port}"]}}]
"""
RULES = """
groups:
  - name: on-call
    interval: 1s
    rules:
      - alert: CheckoutErrorsHigh
        expr: aiops_test_checkout_errors > 0
        for: 0s
        labels: {severity: critical, service: "Checkout API"}
        annotations:
          summary: "Checkout API answers errors"
          runbook_url: "https://wiki.example.org/runbooks/CheckoutErrorsHigh.md"
      - alert: NodeLoadPresent
        expr: node_load1 >= 0
        for: 0s
        labels: {severity: warning}
"""
ALERTMANAGER_CONFIG = """
global: {{resolve_timeout: 10s}}
route:
  receiver: aiops
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 3s
receivers:
  - name: aiops
    webhook_configs:
      - url: "{webhook_url}"
        send_resolved: true
        http_config: {{authorization: {{type: Bearer, credentials: "{token}"}}}}
"""


@dataclass
class AlertingStack:
    stack: Stack
    textfiles: Path

    def checkout_errors(self, value: int) -> None:
        """Set the switch metric; the rule fires while it is above 0."""
        staging = self.textfiles / "switch.prom.tmp"
        staging.write_text(f'# TYPE {SWITCH_METRIC} gauge\n{SWITCH_METRIC}{{shop="eu"}} {value}\n')
        staging.rename(self.textfiles / "switch.prom")

    def rule_state(self, name: str) -> str:
        groups = self.stack.prometheus("/api/v1/rules", type="alert")["groups"]
        rule = next(r for g in groups for r in g["rules"] if r["name"] == name)
        return rule["state"]

    def stop(self) -> None:
        self.stack.stop()


def alerting_start(directory: Path, *, webhook_url: str, token: str) -> AlertingStack:
    node_port, prometheus_port, alertmanager_port = free_port(), free_port(), free_port()
    textfiles = directory / "textfiles"
    textfiles.mkdir()
    (directory / "rules.yml").write_text(RULES)
    (directory / "prometheus.yml").write_text(
        PROMETHEUS_CONFIG.format(
            rules=directory / "rules.yml", alertmanager_port=alertmanager_port, node_port=node_port
        )
    )
    (directory / "alertmanager.yml").write_text(
        ALERTMANAGER_CONFIG.format(webhook_url=webhook_url, token=token)
    )
    running = AlertingStack(
        Stack(
            prometheus_url=f"http://127.0.0.1:{prometheus_port}",
            alertmanager_url=f"http://127.0.0.1:{alertmanager_port}",
            node_exporter_url=f"http://127.0.0.1:{node_port}",
            processes=[],
            logs=directory,
        ),
        textfiles,
    )
    running.checkout_errors(1)
    processes = running.stack.processes
    processes.append(
        _start(
            [
                BINARIES["node_exporter"],
                f"--web.listen-address=127.0.0.1:{node_port}",
                "--collector.disable-defaults",
                "--collector.loadavg",
                "--collector.textfile",
                f"--collector.textfile.directory={textfiles}",
            ],
            directory / "node_exporter.log",
        )
    )
    processes.append(
        _start(
            [
                BINARIES["alertmanager"],
                f"--config.file={directory / 'alertmanager.yml'}",
                f"--storage.path={directory / 'alertmanager-data'}",
                f"--web.listen-address=127.0.0.1:{alertmanager_port}",
                "--cluster.listen-address=",
            ],
            directory / "alertmanager.log",
        )
    )
    processes.append(
        _start(
            [
                BINARIES["prometheus"],
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}",
                # Alerts (and their resolution) reach Alertmanager within a second, not a minute.
                "--rules.alert.resend-delay=1s",
            ],
            directory / "prometheus.log",
        )
    )
    try:
        _wait(
            "Alertmanager",
            lambda: httpx2.get(f"{running.stack.alertmanager_url}/-/ready", timeout=2).status_code == 200,
            directory,
        )
    except BaseException:
        running.stop()
        raise
    return running


def wait_until(condition, *, timeout: float, every: float = 0.3, between=None) -> None:
    """Poll `condition()` until it holds, calling `between()` (e.g. the queue worker) each time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if between is not None:
            between()
        if condition():
            return
        time.sleep(every)
    raise AssertionError(f"not within {timeout}s: {getattr(condition, '__doc__', None) or condition}")
