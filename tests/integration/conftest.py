import json

import pytest

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
