"""Tests that only PostgreSQL can run (concurrent writers, row locks, the scale test).

On SQLite they are skipped with a reason starting `POSTGRESQL_ONLY`; `tests/conftest.py` counts those
skips into one summary line that says how to run them, instead of one line per test.
"""

import pytest
from django.db import connection

POSTGRESQL_ONLY = "PostgreSQL only"
HOW_TO_RUN = "DATABASE_URL=postgres://postgres@127.0.0.1:5432/test make test"


def skip_unless_postgresql(*, why: str) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"{POSTGRESQL_ONLY}: {why}")


def is_postgresql_only_skip(report: pytest.TestReport) -> bool:
    """A skip raised by `skip_unless_postgresql` (or a skipif with its reason), on any xdist worker."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return False
    reason = report.longrepr[2]
    return reason.removeprefix("Skipped: ").startswith(POSTGRESQL_ONLY)
