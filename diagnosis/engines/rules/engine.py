"""The offline, deterministic engine: every stage done by code, no model."""

from __future__ import annotations

from diagnosis.engines.rules.composer import compose_by_rules
from diagnosis.engines.rules.executor import execute_by_rules
from diagnosis.engines.rules.planner import plan_by_rules
from diagnosis.engines.rules.verifier import verify_by_rules
from diagnosis.pipeline.contracts import (
    ComposerInput,
    ComposerOutput,
    ExecutorInput,
    ExecutorOutput,
    PlannerInput,
    PlannerOutput,
    VerifierInput,
    VerifierOutput,
)
from diagnosis.pipeline.interfaces import StageCall, Toolbox

RULES_VERSION = "rules-v1"


class RulesEngine:
    name = "rules"

    def plan(self, stage_input: PlannerInput) -> StageCall[PlannerOutput]:
        output = plan_by_rules(
            stage_input.query,
            focus=stage_input.focus,
            narrow=stage_input.narrow_scope,
            excluded=stage_input.excluded_topics,
            asks=stage_input.asks,
        )
        return StageCall(output=output, thought=_plan_thought(output), prompt_version=RULES_VERSION)

    def execute(self, stage_input: ExecutorInput, toolbox: Toolbox) -> StageCall[ExecutorOutput]:
        output = execute_by_rules(stage_input, toolbox)
        return StageCall(
            output=output, thought=f"提出 {len(output.claims)} 条断言", prompt_version=RULES_VERSION
        )

    def verify(self, stage_input: VerifierInput) -> StageCall[VerifierOutput]:
        output = verify_by_rules(stage_input)
        return StageCall(output=output, thought=output.rationale[:200], prompt_version=RULES_VERSION)

    def compose(self, stage_input: ComposerInput) -> StageCall[ComposerOutput]:
        return StageCall(
            output=compose_by_rules(stage_input), thought="按允许材料撰写", prompt_version=RULES_VERSION
        )


def _plan_thought(plan: PlannerOutput) -> str:
    scope = "窄范围" if plan.narrow_scope else "常规"
    tools = "、".join(step.tool for step in plan.steps)
    return f"{scope}问题；关注 {', '.join(plan.focus) or '全部告警'}；工具：{tools}"
