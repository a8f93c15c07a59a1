"""Planner stage: what to look at, how narrow the question is, what the user excluded."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="query_metrics / query_logs / lookup_knowledge")
    purpose: str


class PlannerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str
    steps: list[PlanStep]
    narrow_scope: bool = Field(description="the user asked to only confirm / only look at one thing")
    focus: list[str] = Field(description="services and alert names the question is about")
    excluded_topics: list[str] = Field(description="what the user said not to analyse")
