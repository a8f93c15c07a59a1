"""Composer stage: writes the Chinese answer from verifier-allowed material only."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ComposerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str
