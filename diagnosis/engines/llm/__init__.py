"""The LLM engine: any OpenAI-compatible endpoint through the official openai SDK."""

from diagnosis.engines.llm.engine import LLMEngine
from diagnosis.engines.llm.errors import LLMUnavailableError

__all__ = ["LLMEngine", "LLMUnavailableError"]
