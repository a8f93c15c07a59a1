"""Running one action from several threads at the same moment, for the PostgreSQL race tests."""

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection


def run_concurrently(action: Callable[[], Any], *, threads: int) -> list[Any]:
    """Call `action` from `threads` threads released together; return each result, or the exception it
    raised. Each thread closes its own database connection."""
    start = threading.Barrier(threads)
    outcomes: list[Any] = []

    def worker() -> None:
        try:
            start.wait()
            outcomes.append(action())
        except Exception as exc:  # the race's loser: returned for the test to inspect
            outcomes.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return outcomes
