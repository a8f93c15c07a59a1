from contextlib import ExitStack

import pytest

from diagnosis.engines.fake_server import FakeOpenAIServer


@pytest.fixture
def fake_llm(monkeypatch, settings):
    """Start a fake OpenAI-compatible server with a script and point the SDK at it (short timeouts)."""
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LLM_TIMEOUT": 2.0, "LLM_MAX_RETRIES": 1}
    with ExitStack() as stack:

        def start(script=None) -> FakeOpenAIServer:
            server = stack.enter_context(FakeOpenAIServer(script))
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            return server

        yield start
