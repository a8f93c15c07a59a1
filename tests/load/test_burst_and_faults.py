"""Load and faults against the real thing (issue 14): gunicorn (`manage.py serve`) and a
django-q2 cluster (`manage.py qcluster`) as subprocesses on loopback, on a SQLite file with the ORM broker
and on PostgreSQL with the Redis broker. A burst of 50 chats and 20 feedback posts loses nothing and
ends every session; a model endpoint that never answers ends its session; a cluster killed mid-session
leaves no session RUNNING once a replacement worker starts.

Bounded: every wait has a deadline; run with `pytest -m load tests/load`.
"""

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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings

from tests.load.settings import HEARTBEAT_SECONDS, LOST_AFTER_SECONDS

pytestmark = pytest.mark.load

MANAGE = str(settings.BASE_DIR / "manage.py")
USERS = 5  # 10 chats each: within the 30/min limit, so every chat must be accepted
CHATS, FEEDBACKS = 50, 20
QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"
ENDED = ("COMPLETED", "FAILED")
LLM_TIMEOUT_SECONDS = 3
REDIS_URL = "redis://127.0.0.1:6379/14"
POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def hanging_model_endpoint():
    """An "OpenAI-compatible" endpoint that takes the connection and the request and never answers."""
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
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
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
def _database(kind: str, tmp_path: Path):
    if kind == "sqlite":
        path = tmp_path / "db.sqlite3"
        yield f"sqlite:///{path}", {}, _sqlite_query(path)
        return
    import psycopg
    import redis

    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True)
        broker = redis.Redis.from_url(REDIS_URL)
        broker.ping()
    except (psycopg.OperationalError, redis.ConnectionError) as error:
        pytest.skip(f"needs PostgreSQL and Redis on loopback: {error}")
    name = f"harden_load_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    broker.flushdb()
    url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url, {"DIAGNOSIS_Q_BROKER": REDIS_URL}, _postgres_query(url)
    finally:
        broker.flushdb()
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.close()


# One Django start-up for the database, the accounts and the session on the model that never answers.
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from diagnosis.services.sessions import session_start
call_command("migrate", interactive=False, verbosity=0)
tokens = []
for n in range({users}):
    user = get_user_model().objects.create_user(f"load{{n}}", password="load-test-pass-2026")
    tokens.append(Token.objects.create(user=user).key)
print(session_start(query="{question}", engine="llm").session_id, " ".join(tokens))
"""
LLM_SESSION_SCRIPT = """
from diagnosis.services.sessions import session_start
print(session_start(query="{question}", engine="llm").session_id)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def stack(request, tmp_path):
    with _database(request.param, tmp_path) as (url, broker, query), hanging_model_endpoint() as model:
        environment = {
            **os.environ,
            "DIAGNOSIS_DEV": "1",
            "DATABASE_URL": url,
            "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
            "DJANGO_SETTINGS_MODULE": "tests.load.settings",
            "DIAGNOSIS_ENGINE": "rules",
            "OPENAI_BASE_URL": model,
            "OPENAI_API_KEY": "load-test",
            "DIAGNOSIS_LLM_TIMEOUT": str(LLM_TIMEOUT_SECONDS),
            "DIAGNOSIS_LLM_MAX_RETRIES": "0",
            "DJANGO_LOG_LEVEL": "WARNING",
            **broker,
        }
        port = _free_port()
        stack = Stack(
            environment=environment, query=query, base_url=f"http://127.0.0.1:{port}", logs=tmp_path
        )
        stack.hung, *stack.tokens = stack.manage(
            "shell", "--no-imports", "-c", SETUP_SCRIPT.format(users=USERS, question=QUESTION)
        ).split()
        stack.start("web", "serve", f"--bind=127.0.0.1:{port}", "--workers=2", "--threads=16")
        stack.start("worker", "qcluster")
        try:
            _wait(lambda: _request(stack, "GET", "/login")[0] == 200, seconds=30, what="web server up")
            yield stack
        finally:
            stack.stop_all()


def _request(stack: Stack, method: str, path: str, *, token: str | None = None, body: dict | None = None):
    request = urllib.request.Request(
        stack.base_url + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Token {token}"} if token else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError as error:
        return 0, str(error).encode()


def _wait(condition, *, seconds: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, f"timed out after {seconds} s waiting for {what}"
        time.sleep(0.2)
    return time.monotonic() - started


def _burst(calls: list) -> list:
    start = threading.Barrier(len(calls))

    def call(action):
        start.wait()
        return action()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(call, calls))


def _rule_evaluations(stack: Stack) -> int:
    text = (
        "self_evaluation::text"
        if stack.environment["DATABASE_URL"].startswith("postgres")
        else "self_evaluation"
    )
    (count,) = stack.query(
        f"SELECT count(*) FROM diagnosis_diagnosissession WHERE {text} LIKE %s", ["%rule_evaluation%"]
    )
    return count[0]


def test_a_burst_and_faults_lose_nothing_and_end_every_session(stack, record_property):
    chats = [
        (
            lambda token=stack.tokens[n % USERS]: _request(
                stack, "POST", "/api/chat", token=token, body={"message": QUESTION}
            )
        )
        for n in range(CHATS)
    ]
    answers = _burst(chats)
    assert Counter(status for status, _ in answers) == {202: CHATS}, answers[:3]
    owners = {json.loads(body)["sessionId"]: stack.tokens[n % USERS] for n, (_, body) in enumerate(answers)}

    burst_seconds = _wait(
        lambda: sum(stack.statuses()[status] for status in ENDED) == CHATS + 1,
        seconds=60,
        what="every session to end",
    )
    ended = stack.query("SELECT engine, status FROM diagnosis_diagnosissession")
    assert Counter(status for engine, status in ended if engine == "rules") == {"COMPLETED": CHATS}
    # The model that never answered: its session ended too (FAILED or DEGRADED, with the cause).
    assert stack.status_of(stack.hung)[0] in ENDED

    feedback = [
        (
            lambda session_id=session_id, token=token: _request(
                stack,
                "POST",
                "/api/feedback",
                token=token,
                body={"sessionId": session_id, "feedback": "not_useful"},
            )
        )
        for session_id, token in list(owners.items())[:FEEDBACKS]
    ]
    assert Counter(status for status, _ in _burst(feedback)) == {200: FEEDBACKS}
    recorded = stack.query("SELECT count(*) FROM diagnosis_diagnosissession WHERE feedback = 'not_useful'")
    assert recorded == [(FEEDBACKS,)]
    # Every rule evaluation ran (retried, not dropped, when the database was busy).
    _wait(lambda: _rule_evaluations(stack) == CHATS + 1, seconds=30, what="every rule evaluation")

    # The whole cluster killed mid-session: a replacement's worker start ends it FAILED, with the cause.
    orphan = stack.manage(
        "shell", "--no-imports", "-c", LLM_SESSION_SCRIPT.format(question=QUESTION)
    ).split()[-1]
    _wait(lambda: stack.status_of(orphan)[0] == "RUNNING", seconds=20, what="the session to run")
    stack.kill("worker")
    killed_at = time.monotonic()
    time.sleep(LOST_AFTER_SECONDS + HEARTBEAT_SECONDS)  # the replacement comes up after the silence
    assert stack.status_of(orphan)[0] == "RUNNING"
    stack.start("worker", "qcluster")
    _wait(lambda: stack.status_of(orphan)[0] == "FAILED", seconds=30, what="the orphaned session to fail")
    killed_seconds = time.monotonic() - killed_at
    assert "心跳" in stack.status_of(orphan)[1]
    assert set(stack.statuses()) <= set(ENDED)

    record_property("burst_seconds", round(burst_seconds, 1))
    record_property("killed_worker_session_failed_seconds", round(killed_seconds, 1))
    print(
        f"\nburst ended in {burst_seconds:.1f} s; killed worker's session FAILED {killed_seconds:.1f} s after the kill"
    )


WEBHOOK_TOKEN = "load-webhook-token"
ALERT = {
    "status": "firing",
    "labels": {"alertname": "HighMemoryUsage", "service": "order-service", "namespace": "production"},
    "annotations": {},
    "startsAt": "2026-11-29T06:35:00Z",
    "fingerprint": "b2c3d4e5f6071829",
}
NOTIFICATION = {
    "receiver": "aiops",
    "status": "firing",
    "alerts": [ALERT],
    "groupKey": "{}:{namespace='production'}",
    "version": "4",
}


def _restart_web(stack: Stack, **environment: str) -> None:
    stack.kill("web")
    stack.environment |= environment
    stack.start("web", "serve", f"--bind={stack.base_url.removeprefix('http://')}", "--workers=1")
    _wait(lambda: _request(stack, "GET", "/login")[0] == 200, seconds=30, what="web server up")


def _notify(stack: Stack) -> dict:
    request = urllib.request.Request(
        stack.base_url + "/api/alertmanager/webhook",
        method="POST",
        data=json.dumps(NOTIFICATION).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {WEBHOOK_TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
        return json.loads(response.read())


def _children(stack, session_id: str) -> list[tuple[str, str]]:
    """Status and error of the report's alert sessions."""
    return stack.query(
        "SELECT c.status, c.error FROM diagnosis_diagnosissession c JOIN diagnosis_diagnosissession p"
        " ON c.parent_id = p.id WHERE p.session_id = %s",
        [session_id],
    )


def test_a_killed_workers_alert_episode_is_analysed_again_after_the_resend(stack):
    # The report's alert session waits on the model that never answers: the worker is killed meanwhile.
    _restart_web(stack, DIAGNOSIS_ALERTMANAGER_TOKEN=WEBHOOK_TOKEN, DIAGNOSIS_ENGINE="llm")
    killed = _notify(stack)["sessionId"]
    # The report runs before it writes its alert sessions: killed in between, it would have none.
    _wait(
        lambda: "RUNNING" in [status for status, _ in _children(stack, killed)],
        seconds=20,
        what="the report's alert session to run",
    )
    stack.kill("worker")
    time.sleep(LOST_AFTER_SECONDS + HEARTBEAT_SECONDS)
    _restart_web(stack, DIAGNOSIS_ENGINE="rules")
    stack.start("worker", "qcluster")
    _wait(lambda: stack.status_of(killed)[0] == "FAILED", seconds=30, what="the killed report to fail")

    again = _notify(stack)

    assert again["episodes"] == {"new": 1, "known": 0, "resolved": 0}
    assert again["sessionId"] != killed
    _wait(lambda: stack.status_of(again["sessionId"])[0] == "COMPLETED", seconds=60, what="the new report")
    children = _children(stack, killed)
    assert children and all(status == "FAILED" for status, _ in children)
    assert all("所属告警分析报告" in error or "心跳" in error for _, error in children)
    evaluated = stack.query(
        "SELECT count(*) FROM diagnosis_diagnosissession WHERE session_id = %s AND "
        + (
            "self_evaluation::text"
            if stack.environment["DATABASE_URL"].startswith("postgres")
            else "self_evaluation"
        )
        + " LIKE %s",
        [killed, "%aiops_rule_evaluation%"],
    )
    assert evaluated == [(1,)]
    assert _notify(stack)["sessionId"] == again["sessionId"]
