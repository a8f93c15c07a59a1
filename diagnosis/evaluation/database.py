"""A throwaway database for commands that run sessions (`eval`, `bench`): never the real one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.test.utils import setup_test_environment, teardown_test_environment


@contextmanager
def throwaway_database() -> Iterator[None]:
    """Create the test database (migrated, empty), use it for the block, then drop it."""
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
