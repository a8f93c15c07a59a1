"""SQLite, the embedded default, takes concurrent writers without `database is locked`.

Each case opens a SQLite file of its own with the project's database settings, whatever database the
rest of the suite runs on, so the embedded default is checked on the PostgreSQL CI run too.
"""

import threading
import time
import uuid
from contextlib import contextmanager

import pytest
from django.db import connections, transaction

from config.settings import database_config

WRITERS = 8


@contextmanager
def sqlite_file_database(path, django_db_blocker):
    alias = f"sqlite-{uuid.uuid4().hex[:8]}"
    config = database_config(f"sqlite:///{path}")
    # The same defaults Django fills in for configured databases (TIME_ZONE, ATOMIC_REQUESTS, …).
    config = connections.configure_settings({"default": config, alias: config})[alias]
    connections.settings[alias] = config
    try:
        with django_db_blocker.unblock():
            yield alias
    finally:
        connections[alias].close()
        del connections.settings[alias]


def test_the_sqlite_file_runs_in_wal_mode_with_normal_sync(tmp_path, django_db_blocker):
    with (
        sqlite_file_database(tmp_path / "db.sqlite3", django_db_blocker) as alias,
        connections[alias].cursor() as cursor,
    ):
        journal_mode = cursor.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = cursor.execute("PRAGMA synchronous").fetchone()[0]

    assert (journal_mode, synchronous) == ("wal", 1)


def test_writers_that_read_first_wait_their_turn_instead_of_failing(tmp_path, django_db_blocker):
    """Read-then-write transactions at once: deferred ones fail at the lock upgrade, immediate ones queue."""
    with sqlite_file_database(tmp_path / "db.sqlite3", django_db_blocker) as alias:
        with connections[alias].cursor() as cursor:
            cursor.execute("CREATE TABLE feedback (n INTEGER)")
        start = threading.Barrier(WRITERS)
        errors: list[Exception] = []

        def writer() -> None:
            try:
                start.wait()
                with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                    count = cursor.execute("SELECT count(*) FROM feedback").fetchone()[0]
                    time.sleep(0.05)
                    cursor.execute("INSERT INTO feedback (n) VALUES (%s)", [count + 1])
            except Exception as error:  # what the test counts
                errors.append(error)
            finally:
                connections[alias].close()

        threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with connections[alias].cursor() as cursor:
            rows = sorted(n for (n,) in cursor.execute("SELECT n FROM feedback").fetchall())

    assert errors == []
    # Serialised, each writer saw the previous one's row: no lost update either.
    assert rows == list(range(1, WRITERS + 1))


@pytest.mark.parametrize("url", ["sqlite:///relative.sqlite3", "sqlite:////tmp/absolute.sqlite3"])
def test_every_sqlite_url_gets_the_concurrency_options(url):
    options = database_config(url)["OPTIONS"]

    assert options["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in options["init_command"]
    assert options["timeout"] >= 5
