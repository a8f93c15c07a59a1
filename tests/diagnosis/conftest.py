from contextlib import ExitStack

import pytest

from diagnosis.evaluation.fake_llm import FakeOpenAIServer
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


@pytest.fixture
def session(db):
    return DiagnosisSessionFactory()


@pytest.fixture
def alert(session):
    """The demo world's HighMemoryUsage alert, recorded in `session` with its evidence ref."""
    return recorded_invocation(session, "query_metrics", "$.alerts[0]", MEMORY_ALERT_TEXT)
