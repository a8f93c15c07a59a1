"""Driving the MCP server with the SDK's own client: over HTTP against a running site, over stdio
against `manage.py mcp` started as a subprocess with a database of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import httpx2
from django.conf import settings
from django.utils.module_loading import import_string
from django_q.models import OrmQ
from django_q.signing import SignedPackage
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

T = TypeVar("T")
Scenario = Callable[[Client], Awaitable[T]]
# One question per world whose answer is a PASS on a firing alert: (question, the alert's name).
ALERT_QUESTIONS = {
    "demo": ("只确认 order-service 是否存在 HighMemoryUsage 告警", "HighMemoryUsage"),
    "shop": ("只确认 checkout 是否存在 KubePodCrashLooping 告警", "KubePodCrashLooping"),
}
# A log search that finds lines in each world: (query, service).
LOG_SEARCHES = {"demo": ("内存", "order-service"), "shop": ("OOMKilled", "checkout")}
STDIO_PASSWORD = "stdio-pass-2026"
MANAGE = str(settings.BASE_DIR / "manage.py")


def over_http(url: str, token: str | None, scenario: Scenario[T]) -> T:
    """Run `scenario` with a client of the Streamable HTTP endpoint at `url`, bearing `token` if any."""

    async def main() -> T:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await scenario(client)

    return anyio.run(main)


def over_stdio(arguments: list[str], environment: dict[str, str], scenario: Scenario[T]) -> T:
    """Run `scenario` with a client of `manage.py mcp ARGUMENTS` started as a subprocess."""

    async def main() -> T:
        parameters = StdioServerParameters(
            command=sys.executable, args=[MANAGE, "mcp", *arguments], env=environment, cwd=settings.BASE_DIR
        )
        async with Client(stdio_client(parameters)) as client:
            return await scenario(client)

    return anyio.run(main)


def subprocess_environment(database: Path, overrides: dict | None = None) -> dict[str, str]:
    """What a `manage.py` subprocess needs to run on `database` with these `DIAGNOSIS` overrides."""
    return {
        "DIAGNOSIS_DEV": "1",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "tests.mcp_server.settings",
        "TEST_DIAGNOSIS_OVERRIDES": json.dumps(overrides or {}),
        "PATH": os.environ.get("PATH", ""),
    }


def stdio_database(database: Path, *usernames: str) -> str:
    """Migrate a new SQLite database and add these users (password `STDIO_PASSWORD`); the first
    user's API token."""
    environment = {**os.environ, **subprocess_environment(database)}
    subprocess.run([sys.executable, MANAGE, "migrate", "-v0"], env=environment, check=True)
    script = (
        "from django.contrib.auth import get_user_model\n"
        "from rest_framework.authtoken.models import Token\n"
        f"users = [get_user_model().objects.create_user(name, password={STDIO_PASSWORD!r}) for name in {list(usernames)!r}]\n"
        "print(Token.objects.create(user=users[0]).key)\n"
    )
    done = subprocess.run(
        [sys.executable, MANAGE, "shell", "-v0", "-c", script],
        env=environment,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def structured(result) -> dict:
    """A tool result's structured content, failing the test with the text when the call failed."""
    assert not result.is_error, result.content[0].text
    return result.structured_content


def worker_runs_the_queue() -> int:
    """Take the tasks queued on the ORM broker and run them, as a worker would; how many ran."""
    queued = list(OrmQ.objects.all())
    OrmQ.objects.filter(pk__in=[row.pk for row in queued]).delete()
    for row in queued:
        task = SignedPackage.loads(row.payload)
        import_string(task["func"])(*task["args"], **task["kwargs"])
    return len(queued)
