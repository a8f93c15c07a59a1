"""The rules engine's composer: the answer written by code from the allowed material alone."""

from __future__ import annotations

from diagnosis.pipeline.composer import answer_from_material
from diagnosis.pipeline.contracts import ComposerInput, ComposerOutput


def compose_by_rules(stage_input: ComposerInput) -> ComposerOutput:
    return ComposerOutput(answer=answer_from_material(stage_input))
