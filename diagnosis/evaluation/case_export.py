"""From production to regression: a reviewed session written as an evaluation case (`case.yaml`).

- Recorded tool outputs become the case's tool data: every alerts / logs call is answered exactly as
  recorded (`responses`), knowledge blocks become the case's only knowledge base.
- Recorded model replies (`AgentStep.model_output` per stage and round) become the script; cited
  invocation ids become `{{inv:<tool>:<n>}}` placeholders, since the replay's ids differ.
- The reviewer's verdict (latest `SessionReview.expected_verdict`, else the session's) becomes the
  expectation; the session's other outcomes are expected too when the reviewer agreed.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from diagnosis.evaluation.fixtures import CASE_FILE, EvalCase
from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from tools.evidence.knowledge.record import RunbookSection
from tools.evidence.registry import ALERTS, KNOWLEDGE, LOGS
from tools.evidence.result import ToolResult

SCRIPTED_STAGES = ("planner", "executor", "verifier", "composer")
CAUSE_PROMPT = "cause-"
EXPORTED_TAG = "exported"
CASE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ExportedCase:
    name: str
    text: str


@dataclass(frozen=True)
class ExportFile:
    filename: str
    content_type: str
    content: bytes


def case_export(*, session: DiagnosisSession) -> ExportedCase:
    """The session as a case; only completed sessions have a verdict to expect."""
    if session.status != DiagnosisSession.Status.COMPLETED:
        raise ValidationError(f"会话 {session.session_id} 未完成（{session.status}），没有可作为期望的结论")
    evaluation = self_evaluation_of(session=session).get(VERIFIER_EVALUATION) or {}
    invocations = list(session.tool_invocations.order_by("id"))
    review = session.reviews.exclude(expected_verdict="").order_by("-created_at", "-id").first()
    expected = review.expected_verdict if review else session.verdict
    case: dict[str, Any] = {
        "description": _description(session, review, expected),
        "question": session.query,
        "engine": session.engine,
        "tags": [EXPORTED_TAG],
        "now": (session.started_at or session.created_at).isoformat(),
        # The final round never retries, so this many rounds reproduce the session's routing.
        "settings": {"MAX_ROUNDS": session.rounds},
        "tools": _tool_data(invocations),
        "script": _script(session, invocations) if session.engine == "llm" else {},
        "expect": _expectation(session, evaluation, expected),
    }
    name = "exported-" + CASE_NAME_UNSAFE.sub("-", session.session_id)
    # Never write a file the loader would refuse.
    EvalCase.model_validate(case)
    return ExportedCase(
        name=name, text=yaml.dump(case, Dumper=_CaseDumper, allow_unicode=True, sort_keys=False, width=4096)
    )


def cases_export_file(*, sessions: Iterable[DiagnosisSession]) -> ExportFile:
    """One session: its case.yaml. Several: a zip holding `<name>/case.yaml` for each."""
    exported = [case_export(session=session) for session in sessions]
    if len(exported) == 1:
        return ExportFile(f"{exported[0].name}.yaml", "application/x-yaml", exported[0].text.encode())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for case in exported:
            archive.writestr(f"{case.name}/{CASE_FILE}", case.text)
    return ExportFile("regression-cases.zip", "application/zip", buffer.getvalue())


def _description(session: DiagnosisSession, review, expected: str) -> str:
    text = f"导出自会话 {session.session_id}（{session.created_at:%Y-%m-%d %H:%M}，{session.engine} 引擎，结论 {session.verdict}）。"
    if review is None:
        return text + "尚无人工复核，期望沿用会话自身的结论。"
    text += f"复核：{review.get_opinion_display()}，期望 {expected}。"
    return text + (f"备注：{review.note}" if review.note else "")


def _expectation(session: DiagnosisSession, evaluation: dict, expected: str) -> dict[str, Any]:
    expect: dict[str, Any] = {"verdict": expected}
    if expected != session.verdict:
        # The reviewer says the pipeline was wrong: only the verdict is known to be right.
        return expect
    gatekeeper = evaluation.get("gatekeeper_result") or {}
    expect |= {"output_type": session.output_type, "rounds": session.rounds}
    if gatekeeper:
        expect |= {"gatekeeper_severity": gatekeeper["severity"], "failed_rules": gatekeeper["failed_rules"]}
    return expect


def _tool_data(invocations: list[ToolInvocation]) -> dict[str, dict]:
    data: dict[str, dict] = {}
    for tool_name in (ALERTS.tool, LOGS.tool):
        calls = [i for i in invocations if i.tool_name == tool_name]
        if not calls:
            continue
        responses: dict[str, dict] = {}
        for invocation in calls:
            result = invocation.tool_result()
            # The first answer to the same arguments wins, as the fixture source looks them up.
            responses.setdefault(
                json.dumps(result.arguments, sort_keys=True, ensure_ascii=False),
                {"arguments": result.arguments}
                | (
                    {"records": [record.stored() for record in result.records]}
                    if result.success
                    else {"error": result.error}
                ),
            )
        data[tool_name] = {"mode": "replace", "responses": list(responses.values())}
    knowledge = [i for i in invocations if KNOWLEDGE.owns(i.tool_name)]
    if knowledge:
        data[KNOWLEDGE.tool] = _knowledge_data([call.tool_result() for call in knowledge])
    return data


def _knowledge_data(calls: list[ToolResult]) -> dict[str, Any]:
    """The blocks the session saw become the whole knowledge base; each stays an exact hit for the
    query that found it, so the replay finds it again (its rank among them may differ): by the terms
    the query named (whose runbook it is), else by the whole query."""
    succeeded = [call for call in calls if call.success]
    if not succeeded:
        return {"mode": "replace", "error": calls[0].error}
    blocks: dict[str, dict] = {}
    for call in succeeded:
        for block in call.records:
            if not isinstance(block, RunbookSection):
                continue
            entry = blocks.setdefault(
                block.block_id,
                {
                    "block_id": block.block_id,
                    "title": block.title,
                    "content": block.content,
                    "source_document": block.source_document,
                    "section": block.section,
                    "exact_terms": [],
                },
            )
            named = block.matched_terms or [call.arguments.get("query")]
            entry["exact_terms"] += [term for term in named if term and term not in entry["exact_terms"]]
    return {"mode": "replace", "blocks": list(blocks.values())}


def _script(session: DiagnosisSession, invocations: list[ToolInvocation]) -> dict[str, list]:
    placeholders = _placeholders(invocations)
    script: dict[str, list] = {}
    for step in session.steps.filter(agent__in=SCRIPTED_STAGES).order_by("round", "id"):
        replies = (step.model_output or {}).get("replies")
        if not replies:
            continue  # not a model call (skipped verifier) or nothing was said
        script.setdefault(_scripted_stage(step), []).extend(_turn(reply, placeholders) for reply in replies)
    return script


def _scripted_stage(step: AgentStep) -> str:
    """The stage a step's replies are scripted under: an executor step on the cause path answered its
    own schema (the cause prompt's), not an ExecutorOutput."""
    if step.agent == "executor" and (step.prompt_version or "").startswith(CAUSE_PROMPT):
        return "cause"
    return step.agent


def _turn(reply: dict, placeholders: dict[int, str]) -> Any:
    """One recorded reply (llm engine: content, finish_reason, the tool calls it made) as a script turn."""
    if reply.get("tool_calls"):
        return {
            "tool_calls": [
                {"name": call["name"], "arguments": call["arguments"]} for call in reply["tool_calls"]
            ]
        }
    if reply.get("truncated"):
        return {"raw": reply["content"], "finish_reason": "length"}
    return _reply(reply["content"], placeholders)


def _reply(text: str, placeholders: dict[int, str]) -> Any:
    """A JSON object reply as a mapping (ids made placeholders), anything else verbatim."""
    try:
        value = json.loads(text)
    except (TypeError, json.JSONDecodeError):
        return text
    if not isinstance(value, dict):
        return text
    for claim in value.get("claims") or []:
        for binding in (claim.get("evidence_bindings") if isinstance(claim, dict) else None) or []:
            cited = binding.get("source_invocation_id") if isinstance(binding, dict) else None
            if isinstance(cited, int) and cited in placeholders:
                binding["source_invocation_id"] = placeholders[cited]
    return value


def _placeholders(invocations: list[ToolInvocation]) -> dict[int, str]:
    """Invocation id → `{{inv:<tool>:<n>}}`, n counting that tool's calls in the order they were made
    (how the fake server numbers the tool messages an executor request carries)."""
    seen: dict[str, int] = {}
    placeholders = {}
    for invocation in invocations:
        n = seen.get(invocation.tool_name, 0)
        seen[invocation.tool_name] = n + 1
        placeholders[invocation.pk] = f"{{{{inv:{invocation.tool_name}:{n}}}}}"
    return placeholders


class _CaseDumper(yaml.SafeDumper):
    """Multi-line text as literal blocks, so exported cases read like hand-written ones."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_CaseDumper.add_representer(str, _represent_text)
