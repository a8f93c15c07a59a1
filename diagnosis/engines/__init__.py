"""Engine selection: `rules` (offline, default) or `llm` (OpenAI-compatible)."""

from __future__ import annotations

from diagnosis.pipeline.interfaces import Engine

ENGINE_NAMES = ("rules", "llm")
# Which engine answers when an engine's backend is unavailable: the rules engine needs none.
FALLBACK_ENGINES = {"llm": "rules"}


def engine_get(name: str) -> Engine:
    if name == "rules":
        from diagnosis.engines.rules import RulesEngine

        return RulesEngine()
    if name == "llm":
        from diagnosis.engines.llm import LLMEngine

        return LLMEngine()
    raise ValueError(f"unknown diagnosis engine {name!r}; expected one of {', '.join(ENGINE_NAMES)}")


def engine_fallback_get(name: str) -> Engine | None:
    fallback = FALLBACK_ENGINES.get(name)
    return engine_get(fallback) if fallback else None
