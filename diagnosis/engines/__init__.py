"""Engine selection: `rules` (offline, default) or `llm` (OpenAI-compatible), by name."""

from __future__ import annotations

from collections.abc import Callable

from diagnosis.engines.llm import LLMEngine
from diagnosis.engines.rules import RulesEngine
from diagnosis.pipeline.interfaces import Engine

# The engines by the name `DIAGNOSIS_ENGINE` and a session's `engine` use.
ENGINES: dict[str, Callable[[], Engine]] = {"rules": RulesEngine, "llm": LLMEngine}
ENGINE_NAMES = tuple(ENGINES)
# Which engine answers when an engine's model is unavailable: the rules engine needs none.
FALLBACK_ENGINES = {"llm": "rules"}


def engine_get(name: str) -> Engine:
    try:
        engine_class = ENGINES[name]
    except KeyError:
        raise ValueError(
            f"unknown diagnosis engine {name!r}; expected one of {', '.join(ENGINE_NAMES)}"
        ) from None
    return engine_class()


def engine_fallback_get(name: str) -> Engine | None:
    fallback = FALLBACK_ENGINES.get(name)
    return engine_get(fallback) if fallback else None
