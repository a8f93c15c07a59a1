"""A throwaway database for commands that run sessions (`eval`, `bench`): never the real one."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection
from django.test.utils import setup_test_environment, teardown_test_environment


@contextmanager
def throwaway_database(*, on_disk: bool = False) -> Iterator[str]:
    """Create the test database (migrated, empty), use it for the block, then drop it; yields its name.

    SQLite's test database is in memory unless `on_disk`: then it is a file in a temporary folder, so
    what is measured includes the file's writes and syncs as the real database has them.
    """
    setup_test_environment()
    test_settings = connection.settings_dict.setdefault("TEST", {})
    configured_name = test_settings.get("NAME")
    with tempfile.TemporaryDirectory(prefix="diagnosis-db-") as folder:
        if on_disk and connection.vendor == "sqlite":
            test_settings["NAME"] = str(Path(folder) / "throwaway.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
        try:
            yield connection.settings_dict["NAME"]
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            test_settings["NAME"] = configured_name
            teardown_test_environment()


@contextmanager
def logs_quiet(*, quiet: bool) -> Iterator[None]:
    """Cases break tools and models on purpose; their logged tracebacks would bury the command's
    output (a failing case reports its error itself). `-v 2` shows them."""
    if quiet:
        logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)
