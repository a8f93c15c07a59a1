from contextlib import ExitStack

import pytest
from django.test import override_settings

from diagnosis.evaluation.fake_llm import FakeOpenAIServer
from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from tests.factories import MEMORY_ALERT_TEXT, DiagnosisSessionFactory, recorded_invocation


@pytest.fixture
def fake_llm(monkeypatch, settings):
    """Start a fake OpenAI-compatible server with a script and point the SDK at it (short timeouts)."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 2.0, "LLM_MAX_RETRIES": 1}
    with ExitStack() as stack:

        def start(script=None, **options) -> FakeOpenAIServer:
            server = stack.enter_context(FakeOpenAIServer(script, **options))
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            return server

        yield start


def world_overrides(name: str, *, diagnosis: dict) -> dict:
    """The `DIAGNOSIS` keys that put `diagnosis` in world `name`: the demo world, or an evaluation
    world (its own names, a vocabulary that does not extend the shipped one) served by the fixture
    source; the clock pinned in both. Plain JSON values, so a subprocess can be given them too."""
    overrides = {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}
    if name != "demo":
        data = world_tools(name).source_data()
        overrides |= {
            "VOCABULARY_FILE": str(WORLDS_DIR / name / "vocabulary.json"),
            **fixture_sources(data, config=diagnosis),
        }
    return overrides


@pytest.fixture(params=["demo", "shop"])
def either_world(request, settings):
    """The demo world, then the `shop` evaluation world (`world_overrides`). Yields the name."""
    overrides = world_overrides(request.param, diagnosis=settings.DIAGNOSIS)
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield request.param


@pytest.fixture
def session(db):
    return DiagnosisSessionFactory()


@pytest.fixture
def alert(session):
    """The demo world's HighMemoryUsage alert, recorded in `session` with its evidence ref."""
    return recorded_invocation(session, "query_alerts", "$.alerts[0]", MEMORY_ALERT_TEXT)
