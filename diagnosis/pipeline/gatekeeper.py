"""Gatekeeper stage (code, no LLM): is every cited excerpt really in that tool call's output?"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["none", "low_confid", "reject"]


class CheckedBinding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str
    tool_name: str
    source_invocation_id: int | None
    raw_path: str | None
    status: Literal["pass", "fail"]
    rule: str | None = None
    matched_text: str | None = None
    similarity: float | None = None
    evidence_excerpt: str = ""


class RuleMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: str
    message: str
    claim_id: str | None = None


class GatekeeperResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["pass", "fail"]
    severity: Severity
    checked_bindings: list[CheckedBinding]
    failed_rules: list[str]
    warnings: list[RuleMessage]
    errors: list[RuleMessage]
