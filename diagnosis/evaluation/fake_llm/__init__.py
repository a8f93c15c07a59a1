"""The scripted OpenAI-compatible server that `eval`, `bench` and the tests run the llm engine against."""

from diagnosis.evaluation.fake_llm.server import FakeOpenAIServer, fake_llm_environment

__all__ = ["FakeOpenAIServer", "fake_llm_environment"]
