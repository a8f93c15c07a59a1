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
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.load import support
from tests.load.settings import HEARTBEAT_SECONDS, LOST_AFTER_SECONDS
from tests.load.support import Stack, database, free_port, hanging_endpoint

pytestmark = pytest.mark.load

USERS = 5  # 10 chats each: within the 30/min limit, so every chat must be accepted
CHATS, FEEDBACKS = 50, 20
QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"
ENDED = ("COMPLETED", "FAILED")
LLM_TIMEOUT_SECONDS = 3


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
    with database(request.param, tmp_path, redis_db=14) as (url, broker, query), hanging_endpoint() as model:
        environment = {
            **os.environ,
            "DIAGNOSIS_DEV": "1",
            "DATABASE_URL": url,
            "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
            "DJANGO_SETTINGS_MODULE": "tests.load.settings",
            "DIAGNOSIS_ENGINE": "rules",
            "OPENAI_BASE_URL": f"{model}/v1",
            "OPENAI_API_KEY": "load-test",
            "DIAGNOSIS_LLM_TIMEOUT": str(LLM_TIMEOUT_SECONDS),
            "DIAGNOSIS_LLM_MAX_RETRIES": "0",
            "DJANGO_LOG_LEVEL": "WARNING",
            **broker,
        }
        port = free_port()
        stack = Stack(
            environment=environment, query=query, base_url=f"http://127.0.0.1:{port}", logs=tmp_path
        )
        stack.hung, *stack.tokens = stack.manage(
            "shell", "--no-imports", "-c", SETUP_SCRIPT.format(users=USERS, question=QUESTION)
        ).split()
        stack.start("web", "serve", f"--bind=127.0.0.1:{port}", "--workers=2", "--threads=16")
        stack.start("worker", "qcluster")
        try:
            support.wait(
                lambda: support.request(stack, "GET", "/login")[0] == 200, seconds=30, what="web server up"
            )
            yield stack
        finally:
            stack.stop_all()


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
            lambda token=stack.tokens[n % USERS]: support.request(
                stack, "POST", "/api/chat", token=token, body={"message": QUESTION}
            )
        )
        for n in range(CHATS)
    ]
    answers = _burst(chats)
    assert Counter(status for status, _ in answers) == {202: CHATS}, answers[:3]
    owners = {json.loads(body)["sessionId"]: stack.tokens[n % USERS] for n, (_, body) in enumerate(answers)}

    burst_seconds = support.wait(
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
            lambda session_id=session_id, token=token: support.request(
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
    support.wait(lambda: _rule_evaluations(stack) == CHATS + 1, seconds=30, what="every rule evaluation")

    # The whole cluster killed mid-session: a replacement's worker start ends it FAILED, with the cause.
    orphan = stack.manage(
        "shell", "--no-imports", "-c", LLM_SESSION_SCRIPT.format(question=QUESTION)
    ).split()[-1]
    support.wait(lambda: stack.status_of(orphan)[0] == "RUNNING", seconds=20, what="the session to run")
    stack.kill("worker")
    killed_at = time.monotonic()
    time.sleep(LOST_AFTER_SECONDS + HEARTBEAT_SECONDS)  # the replacement comes up after the silence
    assert stack.status_of(orphan)[0] == "RUNNING"
    stack.start("worker", "qcluster")
    support.wait(
        lambda: stack.status_of(orphan)[0] == "FAILED", seconds=30, what="the orphaned session to fail"
    )
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
    support.wait(lambda: support.request(stack, "GET", "/login")[0] == 200, seconds=30, what="web server up")


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
    support.wait(
        lambda: "RUNNING" in [status for status, _ in _children(stack, killed)],
        seconds=20,
        what="the report's alert session to run",
    )
    stack.kill("worker")
    time.sleep(LOST_AFTER_SECONDS + HEARTBEAT_SECONDS)
    _restart_web(stack, DIAGNOSIS_ENGINE="rules")
    stack.start("worker", "qcluster")
    support.wait(lambda: stack.status_of(killed)[0] == "FAILED", seconds=30, what="the killed report to fail")

    again = _notify(stack)

    assert again["episodes"] == {"new": 1, "known": 0, "resolved": 0}
    assert again["sessionId"] != killed
    support.wait(
        lambda: stack.status_of(again["sessionId"])[0] == "COMPLETED", seconds=60, what="the new report"
    )
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
