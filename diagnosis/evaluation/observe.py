"""What a finished session shows an evaluation: its outcome, its guards' findings and every text a
user could see, read back from what the pipeline recorded."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Sum

from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.composer import composer_material_build
from diagnosis.pipeline.contracts import ExecutorOutput
from diagnosis.pipeline.gatekeeper import GatekeeperResult, RuleMessage
from diagnosis.pipeline.verdict import Verification
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from tools.evidence.registry import current_name


@dataclass
class Observation:
    status: str
    output_type: str
    verdict: str
    rounds: int
    answer: str
    error: str
    gatekeeper_severity: str = ""
    failed_rules: list[str] = field(default_factory=list)
    warning_rules: list[str] = field(default_factory=list)
    composer_status: str = ""
    executor_parse_status: str = ""
    # Evidence status of every call, per tool.
    evidence_statuses: dict[str, list[str]] = field(default_factory=dict)
    # Final round, after the scope guard.
    kept_claims: int = 0
    # Per kept claim: the tools its verified citations come from.
    cited_tools: list[set[str]] = field(default_factory=list)
    # The texts a user can see: the answer and what the composer was allowed to use.
    user_facing: list[str] = field(default_factory=list)
    llm_calls: int = 0
    tokens: int = 0


def session_observe(*, session: DiagnosisSession) -> Observation:
    evaluation = self_evaluation_of(session=session).get(VERIFIER_EVALUATION) or {}
    usage = session.steps.aggregate(
        calls=Sum("llm_calls"), prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
    )
    statuses: dict[str, list[str]] = defaultdict(list)
    for invocation in session.tool_invocations.all():
        statuses[invocation.tool_name].append(invocation.evidence_status)
    observation = Observation(
        status=session.status,
        output_type=session.output_type,
        verdict=evaluation.get("verdict") or session.verdict,
        rounds=session.rounds,
        answer=session.answer,
        error=session.error,
        evidence_statuses=dict(statuses),
        user_facing=[session.answer],
        llm_calls=usage["calls"] or 0,
        tokens=(usage["prompt"] or 0) + (usage["completion"] or 0),
    )
    if evaluation.get("gatekeeper_result"):
        _read_evaluation(observation, session, evaluation)
    return observation


def _read_evaluation(observation: Observation, session: DiagnosisSession, evaluation: dict) -> None:
    gatekeeper = GatekeeperResult.model_validate(evaluation["gatekeeper_result"])
    observation.gatekeeper_severity = gatekeeper.severity
    observation.failed_rules = list(gatekeeper.failed_rules)
    guard_warnings = [RuleMessage.model_validate(w) for w in evaluation.get("guard_warnings") or []]
    observation.warning_rules = list(
        dict.fromkeys(warning.rule for warning in [*gatekeeper.warnings, *guard_warnings])
    )
    observation.composer_status = (evaluation.get("composer_output") or {}).get("status", "")
    observation.executor_parse_status = (evaluation.get("executor_output_parse_status") or {}).get(
        "status", ""
    )
    kept = ExecutorOutput.model_validate(evaluation["executor_structured_output"])
    observation.kept_claims = len(kept.claims)
    observation.cited_tools = [
        {current_name(binding.tool_name) for binding in gatekeeper.passed_for(claim.claim_id)}
        for claim in kept.claims
    ]
    if observation.composer_status and observation.composer_status != "skipped":
        verification = Verification.model_validate(
            {key: evaluation[key] for key in Verification.model_fields}
        )
        material = composer_material_build(
            query=session.query, executor_output=kept, verification=verification, gatekeeper_result=gatekeeper
        )
        # The question is the user's own text, not something we said.
        observation.user_facing += _strings(dataclasses.asdict(material) | {"query": ""})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
