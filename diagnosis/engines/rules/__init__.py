"""The rules engine: one module per stage, all code, no model."""

from diagnosis.engines.rules.engine import RulesEngine

__all__ = ["RulesEngine"]
