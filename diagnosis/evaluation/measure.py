"""What `bench` measures besides wall time: committed write transactions and model wait at the socket.

- `CommitCounter`: every COMMIT of the default connection (an `atomic` block ending) plus every write
  statement run in autocommit mode (its own implicit commit). Reads in autocommit are not counted:
  they cost no flush. On PostgreSQL `pg_stat_database.xact_commit` is read too (all transactions,
  reads included), as a cross-check from the server's side.
- `SocketWait`: time from sending a request on an httpx transport until its whole response body has
  arrived, so the SDK's own parsing and our CPU are not counted as the model's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx2
from django.db import connection

WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE")


@dataclass
class CommitCounter:
    commits: int = 0

    @contextmanager
    def counting(self) -> Iterator[CommitCounter]:
        """Count the default connection's commits while the block runs."""
        original_commit = connection.commit

        def commit() -> None:
            self.commits += 1
            original_commit()

        def on_execute(execute, sql, params, many, context):
            if connection.get_autocommit() and sql.lstrip()[:7].upper().startswith(WRITE_VERBS):
                self.commits += 1
            return execute(sql, params, many, context)

        connection.commit = commit
        try:
            with connection.execute_wrapper(on_execute):
                yield self
        finally:
            del connection.commit


def server_commits() -> int | None:
    """PostgreSQL's count of committed transactions in this database (None on other databases)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        (count,) = cursor.fetchone()
    return int(count)


@dataclass
class SocketWait:
    """Milliseconds spent waiting on HTTP responses (all threads), since it was created."""

    waited_ms: float = 0.0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def measuring(self) -> Iterator[SocketWait]:
        original = httpx2.HTTPTransport.handle_request
        timer = self

        def handle_request(transport, request):
            started = time.perf_counter()
            response = original(transport, request)
            # The SDK reads non-streaming bodies whole anyway; reading here keeps the body's transfer
            # inside the measured wait.
            response.read()
            with timer._lock:
                timer.waited_ms += (time.perf_counter() - started) * 1000
            return response

        httpx2.HTTPTransport.handle_request = handle_request
        try:
            yield self
        finally:
            httpx2.HTTPTransport.handle_request = original
