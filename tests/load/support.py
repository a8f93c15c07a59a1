"""A deployment on loopback for the load tests: its database (a SQLite file with the ORM broker, or
PostgreSQL with the Redis broker), `manage.py serve` (gunicorn) and `manage.py qcluster` as
subprocesses, and an endpoint that never answers. Every wait has a deadline."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings

MANAGE = str(settings.BASE_DIR / "manage.py")
# The queue's Redis, a database of its own per test file: stacks on one database would take each
# other's tasks (the queue is named after the cluster).
REDIS = "redis://127.0.0.1:6379"
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def hanging_endpoint():
    """An HTTP endpoint (a model server, a source) that takes the connection and the request and never
    answers; its base URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()


@dataclass
class Stack:
    """One deployment: its database, environment, web server and worker cluster."""

    environment: dict
    query: Callable
    base_url: str
    logs: Path
    tokens: list[str] = field(default_factory=list)
    hung: str = ""  # the llm session on the endpoint that never answers, queued just before the burst
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def manage(self, *args: str, timeout: int = 120) -> str:
        result = subprocess.run(
            [sys.executable, MANAGE, *args],
            env=self.environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    def start(self, name: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, MANAGE, *args],
            env=self.environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        # Nothing to save in a throw-away deployment: no graceful (slow) cluster shutdown.
        for name in list(self.processes):
            self.kill(name)

    def statuses(self) -> Counter:
        return Counter(status for (status,) in self.query("SELECT status FROM diagnosis_diagnosissession"))

    def status_of(self, session_id: str) -> tuple[str, str]:
        return self.query(
            "SELECT status, error FROM diagnosis_diagnosissession WHERE session_id = %s", [session_id]
        )[0]


def _sqlite_query(path: Path):
    def query(sql: str, params=()):
        with sqlite3.connect(path, timeout=20) as connection:
            return connection.execute(sql.replace("%s", "?"), params).fetchall()

    return query


def _postgres_query(url: str):
    import psycopg

    def query(sql: str, params=()):
        with psycopg.connect(url, autocommit=True) as connection:
            return connection.execute(sql, params).fetchall()

    return query


@contextmanager
def database(kind: str, tmp_path: Path, *, redis_db: int):
    """`(DATABASE_URL, the broker's environment, query)` of a new database of `kind` (sqlite or
    postgresql, whose queue is Redis database `redis_db`; it skips the test without PostgreSQL and
    Redis on loopback)."""
    if kind == "sqlite":
        path = tmp_path / "db.sqlite3"
        yield f"sqlite:///{path}", {}, _sqlite_query(path)
        return
    import psycopg
    import redis

    redis_url = f"{REDIS}/{redis_db}"
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True)
        broker = redis.Redis.from_url(redis_url)
        broker.ping()
    except (psycopg.OperationalError, redis.ConnectionError) as error:
        pytest.skip(f"needs PostgreSQL and Redis on loopback: {error}")
    name = f"harden_load_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    broker.flushdb()
    url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url, {"DIAGNOSIS_Q_BROKER": redis_url}, _postgres_query(url)
    finally:
        broker.flushdb()
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


def request(stack: Stack, method: str, path: str, *, token: str | None = None, body: dict | None = None):
    """`(status, body)` of one request to the stack's web server (status 0: no answer)."""
    sent = urllib.request.Request(
        stack.base_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Token {token}"} if token else {}),
        },
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError as error:
        return 0, str(error).encode()


def wait(condition, *, seconds: float, what: str) -> float:
    """Seconds until `condition()` held; fails the test after `seconds`."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"timed out after {seconds} s waiting for {what}"
        time.sleep(0.2)
    return time.monotonic() - started
