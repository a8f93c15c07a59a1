"""A real django-q2 worker (`manage.py qcluster`, a subprocess on a SQLite file) sends a session's trace
when the session's task ends: its processes stop without exit handlers, so waiting for the batch's
schedule or the process's end would lose it.

Bounded: every wait has a deadline; run with `pytest -m load tests/load`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from django.conf import settings

pytestmark = pytest.mark.load

MANAGE = str(settings.BASE_DIR / "manage.py")
QUEUE_SCRIPT = """
from django.core.management import call_command
from diagnosis.services.sessions import session_start
call_command("migrate", interactive=False, verbosity=0)
print(session_start(query="只确认 order-service 是否存在 HighMemoryUsage 告警", engine="rules").session_id)
"""


def test_a_worker_sends_a_sessions_trace_when_its_task_ends(otlp_receiver, tmp_path):
    environment = {
        **os.environ,
        "DIAGNOSIS_DEV": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DIAGNOSIS_ENGINE": "rules",
        "DJANGO_LOG_LEVEL": "WARNING",
        # Never on the batch's own schedule within the test: only the task's end can send it.
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
    }
    queued = subprocess.run(
        [sys.executable, MANAGE, "shell", "--no-imports", "-c", QUEUE_SCRIPT],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert queued.returncode == 0, queued.stderr[-3000:]
    session_id = queued.stdout.split()[-1]
    with (tmp_path / "worker.log").open("ab") as log:
        worker = subprocess.Popen(
            [sys.executable, MANAGE, "qcluster"],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while not any(
            span.attributes.get("gen_ai.conversation.id") == session_id
            for span in otlp_receiver.named("invoke_agent diagnosis")
        ):
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)
    finally:
        # Killed, not stopped: nothing the worker did at its exit could have sent the trace.
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
    [root] = [
        span
        for span in otlp_receiver.named("invoke_agent diagnosis")
        if span.attributes["gen_ai.conversation.id"] == session_id
    ]
    assert root.attributes["diagnosis.status"] == "COMPLETED"
    stages = [span for span in otlp_receiver.named("stage") if span.trace_id == root.trace_id]
    assert [span.attributes["diagnosis.stage"] for span in stages][:2] == ["planner", "executor"]
