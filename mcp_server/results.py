"""What the MCP tools answer: typed records read from a recorded session, never computed anew.

A diagnosis answers with what its user would see on the chat page (`session_evidence`: only the claims its
output type may show, each with the citations the gatekeeper passed) and the `结论` lines code wrote
from verified evidence; a tool call answers with its invocation as the model in a diagnosis would have
seen it (`ToolResult.message`), with its provenance and the session it is recorded in.
"""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from pydantic import BaseModel, Field

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.disclosure import output_type_shows_claims
from diagnosis.pipeline.records import verifier_record_read
from diagnosis.pipeline.slot import Slot
from diagnosis.selectors.evidence import CitedEvidence, session_evidence
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from diagnosis.selectors.sessions import ENDED_STATUSES
from diagnosis.serializers import trace_url

NOT_ENDED_ANSWER = (
    "诊断尚未结束（{state}）：本次调用的等待已到期限，会话仍在后台执行，未作任何结论。"
    "结束后在 {session_url} 查看答案，或用 session_trace 读取会话 {session_id}。"
)


class Citation(BaseModel):
    """One piece of recorded tool output a statement rests on; listed only when the gatekeeper found
    the excerpt in that invocation's output at that path."""

    invocation_id: int | None = Field(description="the recorded tool invocation (session_trace lists it)")
    tool_name: str
    raw_path: str = Field(description="where in the invocation's output, e.g. $.alerts[0]")
    excerpt: str = Field(description="the cited text, as found in the output")
    source: str = Field(
        description="where the output came from: prometheus, loki, runbooks, …; demo = the built-in demo data"
    )
    source_location: str = Field(description="the source's URL or folder")


class Conclusion(BaseModel):
    line: str = Field(description="a `结论` line of the answer, written by code from verified evidence")
    citations: list[Citation]


class VerifiedClaim(BaseModel):
    claim_id: str
    claim_type: str = Field(description="observation, negative_observation, root_cause or risk")
    text: str
    verification: str = Field(
        description="the verifier's class: direct_observation, or reasonable_inference (an inference, not a fact)"
    )
    citations: list[Citation]


class DiagnosisAnswer(BaseModel):
    session_id: str
    session_url: str = Field(description="the session on the chat page (claims beside their evidence)")
    trace_url: str = Field(description="the session's full trace in the JSON API")
    status: str = Field(
        description="COMPLETED or FAILED; PENDING or RUNNING when the call stopped waiting first (the session goes on)"
    )
    verdict: str = Field(
        description="PASS, LOW_CONFID or REJECT, computed by code from the checks; empty when failed or not ended"
    )
    output_type: str = Field(
        description="NORMAL (verified), LOW_CONFID_WITH_DISCLAIMER (gaps remain, said in the answer) or DEGRADED (no claim shown: only checked evidence and the gaps)"
    )
    output_type_label: str
    groundedness_score: float | None
    conclusions: list[Conclusion] = Field(
        description="the answer's `结论` lines with their checked citations"
    )
    answer: str = Field(
        description="the answer as the user sees it (Chinese Markdown); for a failed session the stable message with its error id; for one not ended, where to find its result"
    )
    claims: list[VerifiedClaim] = Field(
        description="the claims the answer may state, each with its checked citations"
    )
    verified_evidence: list[Citation] = Field(
        description="when no claim may be shown (DEGRADED, REJECT): the evidence that passed the citation check"
    )
    hidden_claim_count: int = Field(description="claims the verifier did not allow; never stated")
    uses_demo_data: bool = Field(
        description="some evidence came from the built-in demo data, not the team's sources"
    )


class ToolCallResult(BaseModel):
    session_id: str = Field(description="the `tool` session this call is recorded in, under the caller")
    session_url: str
    trace_url: str
    invocation_id: int | None = Field(description="the recorded invocation; null when recording failed")
    tool_name: str
    success: bool
    evidence_status: str = Field(
        description="supported (records found), no_evidence (searched, nothing found) or failed"
    )
    source: str = Field(
        description="where the output came from: prometheus, loki, runbooks, …; demo = the built-in demo data"
    )
    source_location: str
    evidence_refs: list[dict] = Field(
        description="one ref per output record: raw_path and the text code extracted from it (the first 30)"
    )
    output: dict = Field(description="the tool output, bounded; the full output is in the session's trace")
    error: str = ""


def site_url_default() -> str:
    """The site's address for links when the caller's request does not give it (stdio)."""
    return settings.DIAGNOSIS.get("PUBLIC_URL", "")


def session_url(*, session_id: str, site_url: str) -> str:
    return site_url + reverse("chat-conversation", args=[session_id])


def _citation(
    *,
    tool_name: str,
    invocation_id: int | None,
    raw_path: str,
    excerpt: str,
    invocation: ToolInvocation | None,
) -> Citation:
    return Citation(
        invocation_id=invocation_id,
        tool_name=tool_name,
        raw_path=raw_path,
        excerpt=excerpt,
        source=invocation.source if invocation else "",
        source_location=invocation.source_location if invocation else "",
    )


def _binding_citation(binding: CitedEvidence) -> Citation:
    return Citation(
        invocation_id=binding.source_invocation_id,
        tool_name=binding.tool_name,
        raw_path=binding.raw_path,
        excerpt=binding.excerpt,
        source=binding.source,
        source_location=binding.source_location,
    )


def _final_slots(session: DiagnosisSession) -> list[Slot]:
    record = verifier_record_read(self_evaluation_of(session=session).get(VERIFIER_EVALUATION))
    return record.slots if record is not None else []


def _conclusions(session: DiagnosisSession) -> list[Conclusion]:
    """The filled slots' lines, where the output type lets the answer state them."""
    if not output_type_shows_claims(session.output_type):
        return []
    invocations = {invocation.pk: invocation for invocation in session.tool_invocations.all()}
    return [
        Conclusion(
            line=slot.line(),
            citations=[
                _citation(
                    tool_name=binding.tool_name,
                    invocation_id=binding.source_invocation_id,
                    raw_path=binding.raw_path or "",
                    excerpt=binding.evidence_excerpt,
                    invocation=invocations.get(binding.source_invocation_id),
                )
                for binding in slot.bindings
            ],
        )
        for slot in _final_slots(session)
        if slot.filled
    ]


def _not_ended_answer(*, session: DiagnosisSession, site_url: str) -> DiagnosisAnswer:
    """A session still queued or running: its links and state, no claim, and where its result will be."""
    url = session_url(session_id=session.session_id, site_url=site_url)
    return DiagnosisAnswer(
        session_id=session.session_id,
        session_url=url,
        trace_url=site_url + trace_url(session.session_id),
        status=session.status,
        verdict="",
        output_type="",
        output_type_label="",
        groundedness_score=None,
        conclusions=[],
        answer=NOT_ENDED_ANSWER.format(
            state=session.get_status_display(), session_url=url, session_id=session.session_id
        ),
        claims=[],
        verified_evidence=[],
        hidden_claim_count=0,
        uses_demo_data=False,
    )


def diagnosis_answer(*, session: DiagnosisSession, site_url: str) -> DiagnosisAnswer:
    """A finished session's verified answer, as its owner's chat page shows it; for a session not
    ended yet, its state and where its answer will be."""
    if session.status not in ENDED_STATUSES:
        return _not_ended_answer(session=session, site_url=site_url)
    evidence = session_evidence(session=session)
    return DiagnosisAnswer(
        session_id=session.session_id,
        session_url=session_url(session_id=session.session_id, site_url=site_url),
        trace_url=site_url + trace_url(session.session_id),
        status=session.status,
        verdict=session.verdict,
        output_type=session.output_type,
        output_type_label=session.get_output_type_display(),
        groundedness_score=session.groundedness_score,
        conclusions=_conclusions(session),
        answer=session.answer,
        claims=[
            VerifiedClaim(
                claim_id=claim.claim_id,
                claim_type=claim.claim_type,
                text=claim.text,
                verification=claim.verification,
                citations=[_binding_citation(binding) for binding in claim.bindings],
            )
            for claim in evidence.claims
        ],
        verified_evidence=[_binding_citation(binding) for binding in evidence.verified_bindings],
        hidden_claim_count=evidence.hidden_claim_count,
        uses_demo_data=evidence.uses_demo_data,
    )


def tool_call_result(*, session: DiagnosisSession, tool_name: str, site_url: str) -> ToolCallResult:
    """A `tool` session's one call as the model in a diagnosis would have seen it, with its provenance."""
    invocation = session.tool_invocations.first()
    links = {
        "session_id": session.session_id,
        "session_url": session_url(session_id=session.session_id, site_url=site_url),
        "trace_url": site_url + trace_url(session.session_id),
    }
    if invocation is None:
        # Recording itself failed: the session says so with its stable message and error id.
        return ToolCallResult(
            **links,
            invocation_id=None,
            tool_name=tool_name,
            success=False,
            evidence_status="failed",
            source="",
            source_location="",
            evidence_refs=[],
            output={},
            error=session.answer,
        )
    message = invocation.tool_result().message()
    return ToolCallResult(
        **links,
        invocation_id=invocation.pk,
        tool_name=invocation.tool_name,
        success=invocation.success,
        evidence_status=message["evidence_status"],
        source=invocation.source,
        source_location=invocation.source_location,
        evidence_refs=message["evidence_refs"],
        output=message["output"],
        error=invocation.error,
    )
