"""Serving as in production: `manage.py serve` is gunicorn with collected static files,
and `DIAGNOSIS_Q_BROKER=redis://…` queues the background work on Redis."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.conf import settings

REDIS_URL = "redis://127.0.0.1:6379/13"  # a database of its own on the shared Redis


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(**extra: str) -> dict:
    return {**os.environ, "DIAGNOSIS_DEV": "1", **extra}


def _get(url: str, *, deadline: float):
    while True:
        try:
            return urllib.request.urlopen(url, timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_serve_collects_static_files_and_runs_gunicorn(tmp_path):
    port = _free_port()
    static_root = tmp_path / "static"
    server = subprocess.Popen(
        [
            sys.executable,
            str(settings.BASE_DIR / "manage.py"),
            "serve",
            f"--bind=127.0.0.1:{port}",
            "--workers=1",
        ],
        env=_environment(
            DJANGO_STATIC_ROOT=str(static_root), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        response = _get(f"http://127.0.0.1:{port}/static/diagnosis/chat.css", deadline=time.monotonic() + 30)

        assert response.status == 200
        assert response.headers["Server"].startswith("gunicorn")
        assert (static_root / "vendor" / "htmx.min.js").is_file()
        assert (static_root / "admin" / "css" / "base.css").is_file()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_serve_takes_gunicorns_own_variables(tmp_path):
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), "serve"],
        env=_environment(
            WEB_CONCURRENCY="1",
            GUNICORN_CMD_ARGS=f"--bind=127.0.0.1:{port} --threads=2",
            DJANGO_STATIC_ROOT=str(tmp_path / "static"),
            DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        response = _get(f"http://127.0.0.1:{port}/login", deadline=time.monotonic() + 30)

        assert response.status == 200
        assert response.headers["Server"].startswith("gunicorn")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output = server.communicate(timeout=30)[0].decode()
    assert output.count("Booting worker") == 1
    assert f"Listening at: http://127.0.0.1:{port}" in output


def test_a_redis_broker_url_queues_tasks_on_redis():
    redis = pytest.importorskip("redis").Redis.from_url(REDIS_URL)
    try:
        redis.ping()
    except OSError:
        pytest.skip("no Redis at 127.0.0.1:6379")
    redis.flushdb()
    script = (
        "from django_q.brokers import get_broker; from django_q.tasks import async_task;"
        "print(type(get_broker()).__name__); async_task('math.floor', 2.5)"
    )
    try:
        result = subprocess.run(
            [sys.executable, str(settings.BASE_DIR / "manage.py"), "shell", "--no-imports", "-c", script],
            env=_environment(DIAGNOSIS_Q_BROKER=REDIS_URL),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

        assert result.stdout.split() == ["Redis"]
        assert redis.llen("django_q:diagnosis:q") == 1
    finally:
        redis.flushdb()


def test_an_unknown_broker_is_refused_at_start():
    result = subprocess.run(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), "check"],
        env=_environment(DIAGNOSIS_Q_BROKER="amqp://127.0.0.1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode != 0
    assert "DIAGNOSIS_Q_BROKER" in result.stderr
