"""The cause path of the llm executor (§23): when code's investigation has ranked root-cause candidates
and nothing else is left open, the model is asked only to explain them, by number.

The model sees each candidate numbered with its words and numbers (not its evidence text: shown it, a
1.5B model copied it whole as its explanation, a hundred tokens of pod names), and writes a short
explanation per candidate number (and the evidence it would check next). It copies no excerpt and no
invocation: code expands each number into the candidate's own bindings, so a small model cannot
mis-copy a citation. Code also states the evidence the candidates rest on, as the rules
engine does. An explanation whose numbers or names are not in its candidate's evidence is not taken
(the grounding check would only cap it afterwards); one citing no candidate goes on without evidence,
for the candidate guard to block. Every guard still runs on what this returns.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from diagnosis.engines.rules.executor import moved_claims
from diagnosis.pipeline.contracts import (
    Claim,
    EvidenceBinding,
    ExecutorInput,
    ExecutorOutput,
    RankedCandidate,
)
from diagnosis.pipeline.facts import unsupported_facts
from tools.configured_vocabulary import current_vocabulary

MAX_EXPLANATIONS = 3
NOT_IN_EVIDENCE = "候选 {number} 的解释中 {facts} 不在其证据中，未采用"


class CauseExplanation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    candidate: int
    text: str = Field(max_length=400)


class CauseOutput(BaseModel):
    """What the model is asked for on the cause path; code turns it into an `ExecutorOutput`."""

    model_config = ConfigDict(extra="ignore")  # a field said anyway (claims, summary) is not an error

    explanations: list[CauseExplanation]
    next_checks: list[str]


def explains_candidates(stage_input: ExecutorInput) -> bool:
    """The cause path: candidates to explain, every other ask settled by code, and no retry round.
    A narrow confirmation (it states observations only) is code's reading of the question, already in
    `only_candidates_open`, not the planner's label: a 1.5B planner labelled a question asking why and
    how to handle it narrow, and its executor then cited a line under another call's id (REJECT)."""
    return bool(stage_input.candidates) and stage_input.only_candidates_open and not stage_input.retry_context


def candidates_for_model(candidates: list[RankedCandidate]) -> list[dict]:
    return [
        {
            "candidate": number,
            "subject": candidate.subject,
            "mechanism": candidate.mechanism,
            "before": candidate.before,
            "after": candidate.after,
        }
        for number, candidate in enumerate(candidates, start=1)
    ]


def evidence_claims(stage_input: ExecutorInput) -> list[Claim]:
    """The evidence the candidates rest on, each quoted by code as its record says it."""
    return moved_claims(
        stage_input.inference_refs, excluded=stage_input.plan.excluded_topics, vocabulary=current_vocabulary()
    )


def executor_output_from(
    output: CauseOutput | None, stage_input: ExecutorInput
) -> tuple[ExecutorOutput, list[str]]:
    """The executor output code builds from the model's explanations (None: no usable reply), and
    what was not taken, and why."""
    claims = evidence_claims(stage_input)
    dropped: list[str] = []
    explanations = output.explanations[:MAX_EXPLANATIONS] if output else []
    for index, explanation in enumerate(explanations, start=1):
        text = explanation.text.strip()
        if not text:
            continue
        candidate = (
            stage_input.candidates[explanation.candidate - 1]
            if 1 <= explanation.candidate <= len(stage_input.candidates)
            else None
        )
        bindings = _cited(text, candidate, stage_input.candidates) if candidate else []
        if candidate is not None:
            missing = unsupported_facts(text, [b.evidence_excerpt for b in bindings])
            if missing:
                dropped.append(NOT_IN_EVIDENCE.format(number=explanation.candidate, facts="、".join(missing)))
                continue
        claims.append(
            Claim(
                claim_id=f"cause-{index}",
                claim_type="root_cause",
                claim_text=text,
                evidence_bindings=bindings,
            )
        )
    return (
        ExecutorOutput(
            claims=claims,
            hypotheses=[],
            missing_info=[],
            # All of them: the guards remove a remedy or a command; a cut here could keep those instead.
            recommended_actions=[c.strip() for c in (output.next_checks if output else []) if c.strip()],
            diagnosis_summary="",
            user_facing_answer="",
        ),
        dropped,
    )


def _cited(text: str, candidate: RankedCandidate, candidates: list[RankedCandidate]) -> list[EvidenceBinding]:
    """The candidate's bindings, and those of each other candidate whose evidence holds a number or
    name of `text` the candidate's does not (measured on a 1.5B model: candidate 1 explained with
    candidate 2's before → after)."""
    bindings = list(candidate.bindings)
    for other in candidates:
        missing = unsupported_facts(text, [b.evidence_excerpt for b in bindings])
        if not missing:
            break
        if other is not candidate and len(
            unsupported_facts(text, [b.evidence_excerpt for b in [*bindings, *other.bindings]])
        ) < len(missing):
            bindings += other.bindings
    return bindings
