import pytest
from django.core.cache import cache
from django.test import override_settings

from tests.databases import HOW_TO_RUN, is_postgresql_only_skip, skip_unless_postgresql
from tests.otlp_receiver import OtlpReceiver

# The report category of a PostgreSQL-only skip: counted apart, so `-ra` does not list each one.
POSTGRESQL_ONLY_STATUS = "skipped (PostgreSQL only)"


@pytest.fixture(autouse=True, scope="session")
def fast_password_hasher():
    """PBKDF2 spends ~0.6 s on every password a factory or login sets; the tests check behaviour,
    not hashing strength, so they hash with MD5 (never a production setting)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def fresh_rates():
    """The per-user trace read rate counts in the cache, where user ids recur from test to test:
    each test starts with none used."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def otlp_receiver(monkeypatch):
    """A local OTLP/HTTP receiver, the product's traces sent to it; message content not captured."""
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
        yield receiver


@pytest.fixture
def postgres_only(db):
    skip_unless_postgresql(why="concurrent writers and row locks")


def pytest_report_teststatus(report, config):
    if is_postgresql_only_skip(report):
        return POSTGRESQL_ONLY_STATUS, "s", "SKIPPED (PostgreSQL only)"
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = len(terminalreporter.stats.get(POSTGRESQL_ONLY_STATUS, []))
    if skipped:
        terminalreporter.write_line(
            f"{skipped} PostgreSQL-only tests skipped on SQLite; to run them: {HOW_TO_RUN}", yellow=True
        )
