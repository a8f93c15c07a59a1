"""MCP `diagnose` against the production serving (issue 38): gunicorn (`manage.py serve`, its own
processes and threads) and a django-q2 cluster, with Prometheus answering nothing. 17 `diagnose` calls
of one user at once, through the SDK's own client, leave the site to everybody else: another user's
`/login` answers in under a second throughout. The calls' sessions run on the worker; the web side
waits for them up to its deadline, answers the ones past it with their links, and refuses the calls
beyond the user's in-flight cap.

Bounded: every wait has a deadline; run with `pytest -m load tests/load`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import httpx2
import pytest
from django.conf import settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.load import support
from tests.load.support import Stack, database, free_port, hanging_endpoint

pytestmark = pytest.mark.load

CALLS = 17
QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"
SOURCE_TIMEOUT_SECONDS = 3
WAIT_SECONDS = 5
LOGIN_SECONDS = 1.0
SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token
call_command("migrate", interactive=False, verbosity=0)
caller = get_user_model().objects.create_user("mcp-caller", password="load-test-pass-2026")
print(Token.objects.create(user=caller).key)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def stack(request, tmp_path):
    with (
        database(request.param, tmp_path, redis_db=12) as (url, broker, query),
        hanging_endpoint() as prometheus,
    ):
        environment = {
            **os.environ,
            "DIAGNOSIS_DEV": "1",
            "DATABASE_URL": url,
            "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
            "DJANGO_SETTINGS_MODULE": "tests.load.settings",
            "DIAGNOSIS_ENGINE": "rules",
            "DIAGNOSIS_PROMETHEUS_URL": prometheus,
            "DIAGNOSIS_SOURCE_TIMEOUT": str(SOURCE_TIMEOUT_SECONDS),
            "TEST_DIAGNOSIS_OVERRIDES": json.dumps({"MCP_WAIT_SECONDS": WAIT_SECONDS}),
            "DJANGO_LOG_LEVEL": "WARNING",
            **broker,
        }
        port = free_port()
        stack = Stack(
            environment=environment, query=query, base_url=f"http://127.0.0.1:{port}", logs=tmp_path
        )
        stack.tokens = stack.manage("shell", "--no-imports", "-c", SETUP_SCRIPT).split()[-1:]
        # Production's serving as `serve` starts it: its processes and threads, nothing added.
        stack.start("web", "serve", f"--bind=127.0.0.1:{port}")
        stack.start("worker", "qcluster")
        try:
            support.wait(
                lambda: support.request(stack, "GET", "/login")[0] == 200, seconds=30, what="web server up"
            )
            # Each gunicorn process loads the URLconf (and with it the MCP SDK) on its first request, a
            # few seconds on a busy host that its other threads wait out: measured once all are warm.
            support.wait(
                lambda: max(_logins_at_once(stack, 16)) < LOGIN_SECONDS, seconds=60, what="every process warm"
            )
            yield stack
        finally:
            stack.stop_all()


def _login(stack: Stack) -> tuple[int, float]:
    """Another user opening the login page: its status and seconds."""
    started = time.monotonic()
    status, _ = support.request(stack, "GET", "/login")
    return status, time.monotonic() - started


def _logins_at_once(stack: Stack, logins: int) -> list[float]:
    with ThreadPoolExecutor(max_workers=logins) as pool:
        answered = list(pool.map(lambda _: _login(stack), range(logins)))
    assert {status for status, _ in answered} == {200}, answered
    return [seconds for _, seconds in answered]


def _diagnose_at_once(stack: Stack, calls: int) -> list[tuple[float, object]]:
    """`calls` diagnose calls of the stack's user at once, through one SDK client: each one's seconds
    and result."""

    async def main() -> list[tuple[float, object]]:
        answered: list[tuple[float, object]] = []

        async def diagnose(client: Client) -> None:
            started = time.monotonic()
            result = await client.call_tool("diagnose", {"question": QUESTION})
            answered.append((time.monotonic() - started, result))

        headers = {"Authorization": f"Bearer {stack.tokens[0]}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(f"{stack.base_url}/mcp", http_client=http)) as client,
            anyio.create_task_group() as calls_group,
        ):
            for _ in range(calls):
                calls_group.start_soon(diagnose, client)
        return answered

    return anyio.run(main)


def test_17_diagnose_calls_on_a_hanging_source_leave_the_site_to_other_users(stack, record_property):
    answered_logins: list[tuple[int, float]] = []
    calls_done = threading.Event()

    def another_user_logs_in() -> None:
        while not calls_done.is_set():
            answered_logins.append(_login(stack))
            time.sleep(0.2)

    prober = threading.Thread(target=another_user_logs_in)
    prober.start()
    try:
        answered = _diagnose_at_once(stack, CALLS)
    finally:
        calls_done.set()
        prober.join()

    assert {status for status, _ in answered_logins} == {200} and len(answered_logins) >= 5, answered_logins
    logins = [seconds for _, seconds in answered_logins]
    assert max(logins) < LOGIN_SECONDS, sorted(logins)[-5:]
    # The cap as configured (the stack reads the same environment).
    cap = settings.DIAGNOSIS["MCP_MAX_IN_FLIGHT"]
    # Every call is answered by the deadline (with a margin for start-up on a shared host).
    assert max(seconds for seconds, _ in answered) < WAIT_SECONDS + 10
    accepted = [result.structured_content for _, result in answered if not result.is_error]
    refused = [result.content[0].text for _, result in answered if result.is_error]
    assert len(accepted) == cap and len(refused) == CALLS - cap
    assert all("个会话在排队或执行中" in text for text in refused), refused
    # Past the deadline, each accepted call said where its session is and that it is not done yet.
    for answer in accepted:
        assert answer["status"] in ("PENDING", "RUNNING")
        assert answer["session_url"].endswith(f"/c/{answer['session_id']}")
        assert answer["claims"] == [] and answer["conclusions"] == []
    # The worker runs them to their end: nothing was lost with the web side's answer.
    sessions = [answer["session_id"] for answer in accepted]
    ended_seconds = support.wait(
        lambda: all(stack.status_of(session)[0] in ("COMPLETED", "FAILED") for session in sessions),
        seconds=120,
        what="the accepted calls' sessions to end on the worker",
    )
    assert stack.statuses().total() == cap

    record_property("slowest_login_seconds", round(max(logins), 2))
    print(
        f"\n{CALLS} diagnose calls: {len(accepted)} answered with their links after "
        f"{max(seconds for seconds, _ in answered):.1f} s, {len(refused)} refused; slowest /login "
        f"{max(logins):.2f} s of {len(logins)}; sessions ended on the worker {ended_seconds:.1f} s later"
    )
