"""Engine selection: `rules` (offline, default) or `llm` (OpenAI-compatible)."""

from __future__ import annotations

from diagnosis.pipeline.interfaces import Engine

ENGINE_NAMES = ("rules", "llm")


def engine_get(name: str) -> Engine:
    if name == "rules":
        from diagnosis.engines.rules import RulesEngine

        return RulesEngine()
    if name == "llm":
        from diagnosis.engines.llm import LLMEngine

        return LLMEngine()
    raise ValueError(f"unknown diagnosis engine {name!r}; expected one of {', '.join(ENGINE_NAMES)}")
