"""A real Prometheus over a day of OpenMetrics: `promtool tsdb create-blocks-from openmetrics` into a
temporary folder, Debian's `prometheus` on a free 127.0.0.1 port over it.

Backfilled blocks keep samples, not metadata (TYPE, HELP, UNIT live in the scrape cache), so the
families' metadata is served on loopback as a text exposition with no samples and scraped: the
server then answers `/api/v1/metadata` as it does for what it scrapes. The scrape target's `job`
label is dropped, so the only series of the scrape (`up` and the `scrape_*` ones) name no service.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2

from diagnosis.evaluation.nezha.openmetrics import Family

START_TIMEOUT = 60.0
CONFIG = """
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: metadata
    static_configs: [{{targets: ["127.0.0.1:{port}"]}}]
    relabel_configs:
      - {{action: labeldrop, regex: job}}
"""


class PrometheusError(RuntimeError):
    """promtool or prometheus is missing or did not start."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def blocks_created(openmetrics: Path, *, into: Path) -> Path:
    """The TSDB blocks of an OpenMetrics file, written by promtool into `into`."""
    promtool = _binary("promtool")
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(into)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise PrometheusError(f"promtool 失败：{done.stderr.strip()[-2000:]}")
    return into


def metadata_exposition(families: Iterable[Family]) -> str:
    """The families' TYPE and HELP in the text format (a counter named with `_total`), no samples."""
    lines = []
    for family in families:
        lines += [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.type}"]
    return "\n".join(lines) + "\n"


@contextmanager
def prometheus_serving(tsdb: Path, *, metadata: str, workdir: Path) -> Iterator[str]:
    """Prometheus over the blocks in `tsdb` on a free loopback port, answering the families'
    metadata; yields its URL, stops it (and the metadata server) afterwards."""
    binary = _binary("prometheus")
    with _exposition_served(metadata) as metadata_port:
        config = workdir / "prometheus.yml"
        config.write_text(CONFIG.format(port=metadata_port), encoding="utf-8")
        port = free_port()
        log = workdir / "prometheus.log"
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tsdb}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=15d",
            ],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _ready(url, process, log)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _ready(url: str, process: subprocess.Popen, log: Path) -> None:
    """Ready once it answers queries and has scraped the metadata."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            answer = httpx2.get(f"{url}/api/v1/metadata", timeout=2).json()
            if answer.get("data"):
                return
        except (httpx2.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise PrometheusError(f"prometheus 未在 {START_TIMEOUT:g}s 内就绪：{tail}")


@contextmanager
def _exposition_served(text: str) -> Iterator[int]:
    body = text.encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise PrometheusError(f"找不到 {name}：请安装 Debian 的 prometheus 软件包")
    return path
