import json

import pytest

from tests.integration.exporter_stack import exporter_stack_start, missing_packages
from tests.integration.stack import LOKI_TENANT, WORLD, missing_binaries, stack_start
from tests.loki_server import FakeLoki


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The real servers, started once for the integration tests and stopped after them."""
    missing = missing_binaries()
    if missing:
        pytest.fail(f"Debian packages missing: {', '.join(missing)} (`make test` installs them)")
    running = stack_start(tmp_path_factory.mktemp("stack"))
    yield running
    running.stop()


@pytest.fixture(scope="session")
def exporter_stack():
    """nginx, PostgreSQL, Redis, their exporters, blackbox and node_exporter, Prometheus, Alertmanager
    and the log files in the test Loki server, with traffic: started once, stopped after the tests."""
    missing = missing_packages()
    if missing:
        pytest.fail(f"Debian packages missing: {', '.join(missing)} (`make sources-stack` installs them)")
    running = exporter_stack_start()
    yield running
    running.stop()


@pytest.fixture
def exporter_sources(settings, exporter_stack):
    """The exporter stack as a team's sources, with the product's own vocabulary."""
    settings.DIAGNOSIS = (
        settings.DIAGNOSIS | exporter_stack.settings() | {"VOCABULARY_FILE": None, "DEMO_NOW": None}
    )
    return settings.DIAGNOSIS


@pytest.fixture
def loki():
    with FakeLoki(json.loads((WORLD / "loki_streams.json").read_text()), tenant=LOKI_TENANT) as server:
        yield server


@pytest.fixture
def team_sources(settings, stack, loki):
    """Every source of the second world configured, as a team would for its own stack."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": stack.prometheus_url,
        "LOKI_URL": loki.url,
        "LOKI_TENANT": LOKI_TENANT,
        "RUNBOOKS_DIR": str(WORLD / "runbooks"),
        "VOCABULARY_FILE": str(WORLD / "vocabulary.json"),
        "DEMO_NOW": None,
    }
    return settings.DIAGNOSIS


@pytest.fixture
def session(db):
    from tests.factories import DiagnosisSessionFactory

    return DiagnosisSessionFactory()
