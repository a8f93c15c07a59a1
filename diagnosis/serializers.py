"""Request validation and response shapes of the JSON API.

The chat response serializers only describe the shape for the OpenAPI schema (the views build those
bodies); `TraceSerializer` both produces the trace JSON and documents it. A claims check answers with a
pydantic model (`ClaimsVerificationAnswer`), the same the MCP tool `verify_claims` returns.
"""

from __future__ import annotations

from django.urls import reverse
from pydantic import BaseModel, Field
from rest_framework import serializers

from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.pipeline.claims_check import ClaimStatus
from diagnosis.selectors.claims_verification import claims_check_of, invocation_locations
from diagnosis.selectors.sessions import ENDED_STATUSES, ROW_QUERY_CHARS, row_query
from diagnosis.services.invocations import FAILED, NO_EVIDENCE, NOT_EVIDENCE, SUPPORTED
from diagnosis.services.reviews import VERDICTS
from tools.source_names import DEMO


def trace_url(session_id: str) -> str:
    return reverse("api-session-trace", kwargs={"session_id": session_id})


class ChatRequestSerializer(serializers.Serializer):
    message = serializers.CharField(help_text="The operations question, in Chinese or English.")
    session_id = serializers.CharField(
        required=False, max_length=64, help_text="Optional client-chosen id (letters, digits, - _ .)."
    )


class ChatAcceptedSerializer(serializers.Serializer):
    sessionId = serializers.CharField()
    status = serializers.ChoiceField(choices=DiagnosisSession.Status.choices)
    traceUrl = serializers.CharField()


class SessionListFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=DiagnosisSession.Status.choices, required=False)
    output_type = serializers.ChoiceField(choices=DiagnosisSession.OutputType.choices, required=False)
    verdict = serializers.ChoiceField(choices=VERDICTS, required=False)
    feedback = serializers.ChoiceField(choices=DiagnosisSession.Feedback.choices, required=False)


# The columns a session list row shows; the rest (answer, self_evaluation, ...) is in the trace.
SESSION_LIST_COLUMNS = (
    "session_id",
    "query",
    "status",
    "output_type",
    "verdict",
    "groundedness_score",
    "gatekeeper_severity",
    "feedback",
    "engine",
    "rounds",
    "created_at",
    "finished_at",
)


class SessionSummarySerializer(serializers.ModelSerializer):
    """One row of the session list: what a list shows, with the link to the full trace."""

    query = serializers.SerializerMethodField(
        help_text=f"The question, cut with … past {ROW_QUERY_CHARS} characters."
    )
    traceUrl = serializers.SerializerMethodField()

    class Meta:
        model = DiagnosisSession
        fields = (*SESSION_LIST_COLUMNS, "traceUrl")

    def get_query(self, session: DiagnosisSession) -> str:
        return row_query(session)

    def get_traceUrl(self, session: DiagnosisSession) -> str:
        return trace_url(session.session_id)


class StoredDateTimeField(serializers.DateTimeField):
    """ISO 8601 as stored, with its own offset: not converted to the display time zone."""

    def to_representation(self, value):
        return value.isoformat() if value else None


class TraceSessionSerializer(serializers.Serializer):
    session_id = serializers.CharField()
    query = serializers.CharField()
    status = serializers.ChoiceField(choices=DiagnosisSession.Status.choices)
    output_type = serializers.CharField(
        help_text="NORMAL / LOW_CONFID_WITH_DISCLAIMER / DEGRADED, empty while running"
    )
    answer = serializers.CharField()
    engine = serializers.CharField()
    rounds = serializers.IntegerField()
    feedback = serializers.ChoiceField(choices=DiagnosisSession.Feedback.choices, allow_null=True)
    error = serializers.CharField()
    created_at = StoredDateTimeField()
    finished_at = StoredDateTimeField(allow_null=True)


class TraceStepSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField()
    agent = serializers.ChoiceField(choices=AgentStep.Agent.choices)
    status = serializers.ChoiceField(choices=AgentStep.Status.choices)
    thought = serializers.CharField()
    model_output = serializers.DictField()
    latency_ms = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    llm_calls = serializers.IntegerField()
    prompt_version = serializers.CharField()
    created_at = StoredDateTimeField()


class TraceInvocationSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The source_invocation_id claims cite.")
    round = serializers.IntegerField()
    tool_name = serializers.CharField()
    source = serializers.CharField(
        help_text="Provenance: prometheus, alertmanager, loki, runbooks, demo (the demo world), fixture, or a source class's dotted path."
    )
    source_location = serializers.CharField(help_text="The source's URL (credentials removed) or folder.")
    input = serializers.DictField()
    success = serializers.BooleanField()
    evidence_status = serializers.ChoiceField(
        choices=(SUPPORTED, NO_EVIDENCE, FAILED, NOT_EVIDENCE),
        help_text=f"{NOT_EVIDENCE}: a helper tool (the clock), neither evidence nor a gap.",
    )
    retrieval_details = serializers.DictField()
    latency_ms = serializers.IntegerField()
    output = serializers.DictField()
    error = serializers.CharField()
    receipt = serializers.DictField(
        help_text="The evidence receipt (`tools.evidence.receipt.Receipt`): source, location, evaluated_at "
        "(the call's now), requests as sent (source, base_url without credentials, path, query, start, end, "
        "time, step, limit, other params; never a header) and output_sha256 (SHA-256 of the stored output's "
        "canonical JSON, null when the call raised); {} for a call recorded before receipts were kept."
    )
    created_at = StoredDateTimeField()


class TracePageQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(
        min_value=1, default=1, help_text="The page of tool invocations, from 1 (`tool_invocations_page`)."
    )


class TraceInvocationsPageSerializer(serializers.Serializer):
    page = serializers.IntegerField(source="number")
    page_size = serializers.IntegerField(source="size")
    total = serializers.IntegerField(help_text="The session's tool invocations, all pages.")
    next_page = serializers.IntegerField(allow_null=True, help_text="null on the last page")


class TraceSerializer(serializers.Serializer):
    """The trace JSON of one `SessionTrace`: plain JSON types only, timestamps as ISO 8601 strings."""

    session = TraceSessionSerializer()
    hasFeedback = serializers.BooleanField(source="has_feedback")
    hasVerifierEvaluation = serializers.BooleanField(source="has_verifier_evaluation")
    hasAiOpsRuleEvaluation = serializers.BooleanField(source="has_aiops_rule_evaluation")
    self_evaluation = serializers.DictField(
        help_text="Slots rule_evaluation, verifier_evaluation, aiops_rule_evaluation, claims_verification (verify sessions), one writer each."
    )
    steps = TraceStepSerializer(many=True, source="session.steps")
    tool_invocations = TraceInvocationSerializer(
        many=True,
        source="invocations",
        help_text="One page of them, each output bounded (`truncated` and its totals when cut).",
    )
    tool_invocations_page = TraceInvocationsPageSerializer(source="invocations_page")
    aiops = serializers.DictField(
        required=False,
        help_text="AIOps sessions only: the alert scope and each alert's child session (a child: its parent).",
    )

    def to_representation(self, instance):
        data = super().to_representation(instance)
        # The reader's view of the error (`SessionTrace.error`), not necessarily the stored column.
        data["session"]["error"] = instance.error
        if instance.aiops is None:
            del data["aiops"]
        return data


# --- Verification of claims (`POST /api/verify`, MCP `verify_claims`): one typed answer for both ---

NOT_ENDED_CHECK = (
    "核对尚未结束（{state}）：本次请求的等待已到期限，会话仍在后台执行。"
    "结束后用 GET {result_url} 或 session_trace 读取会话 {session_id}。"
)


class VerifyEvidence(BaseModel):
    invocation_id: int | None = Field(description="the recorded tool invocation (its trace lists it)")
    tool_name: str
    raw_path: str | None = Field(
        description="where in the invocation's output, e.g. $.series[0]; null for a failed call"
    )
    excerpt: str = Field(description="the recorded text the claim was judged on (a failed call: its error)")
    source: str = Field(
        description="where the output came from: prometheus, loki, alertmanager, …; demo = the built-in demo data"
    )
    source_location: str = Field(description="the source's URL (credentials removed) or folder")


class VerifiedClaimResult(BaseModel):
    claim_id: str = Field(description="c1, c2, … in the order sent")
    text: str = Field(description="the claim as sent")
    status: ClaimStatus = Field(
        description="supported; contradicted (see values); not_found (the call returned nothing, or nothing "
        "it returned is what the claim names); unverifiable (no query given, a query it may not run or "
        "that failed, an alert's past state, or an instruction in the claim's text)"
    )
    reason: str = Field(description="why, in Chinese, as the checks found it")
    values: list[str] = Field(
        description="contradicted: the values the source returned (a number's true value, how many records were found)"
    )
    evidence: list[VerifyEvidence]
    rules: list[str] = Field(
        description="the checks' rules it failed: evidence.polarity_mismatch (it says the opposite of what "
        "was returned, or that something is there where nothing was), evidence.label_unsupported (it "
        "calls a log line an error, a timeout or a slow request that the line is not)"
    )


class ClaimsVerificationAnswer(BaseModel):
    session_id: str = Field(description="the `verify` session the check is recorded in, under the caller")
    session_url: str
    trace_url: str = Field(
        description="everything recorded: the calls, the gatekeeper's and the verifier's steps"
    )
    result_url: str = Field(description="this answer again, once the check has ended")
    status: str = Field(description="COMPLETED or FAILED; PENDING or RUNNING when the wait ended first")
    verdict: str = Field(
        description="PASS (every claim supported), LOW_CONFID (some not found or unverifiable), REJECT (one "
        "contradicted): computed by code; empty until the check has ended"
    )
    groundedness_score: float | None = Field(description="share of the claims supported")
    counts: dict[str, int] = Field(description="claims per status")
    claims: list[VerifiedClaimResult]
    message: str = Field(description="the check in words; a failed check's stable message with its error id")
    uses_demo_data: bool = Field(
        description="some evidence came from the built-in demo data, not the team's sources"
    )


def verify_result_url(session_id: str) -> str:
    return reverse("api-verify-result", kwargs={"session_id": session_id})


def claims_verification_answer(*, session: DiagnosisSession, site_url: str = "") -> ClaimsVerificationAnswer:
    """A `verify` session as its caller reads it: its outcome once ended, else its state and links."""
    links = {
        "session_id": session.session_id,
        "session_url": site_url + reverse("chat-conversation", args=[session.session_id]),
        "trace_url": site_url + trace_url(session.session_id),
        "result_url": site_url + verify_result_url(session.session_id),
        "status": session.status,
    }
    check = claims_check_of(session=session) if session.status == DiagnosisSession.Status.COMPLETED else None
    if check is None:
        ended = session.status in ENDED_STATUSES
        message = (
            session.answer
            if ended
            else NOT_ENDED_CHECK.format(
                state=session.get_status_display(),
                result_url=links["result_url"],
                session_id=session.session_id,
            )
        )
        return ClaimsVerificationAnswer(
            **links,
            verdict="",
            groundedness_score=None,
            counts={},
            claims=[],
            message=message,
            uses_demo_data=False,
        )
    locations = invocation_locations(session=session)

    def evidence(item) -> VerifyEvidence:
        source, location = locations.get(item.invocation_id, (item.source, ""))
        return VerifyEvidence(**item.model_dump(exclude={"source"}), source=source, source_location=location)

    return ClaimsVerificationAnswer(
        **links,
        verdict=check.verdict,
        groundedness_score=check.groundedness_score,
        counts=check.counts(),
        claims=[
            VerifiedClaimResult(
                **outcome.model_dump(exclude={"evidence"}),
                evidence=[evidence(item) for item in outcome.evidence],
            )
            for outcome in check.claims
        ],
        message=session.answer,
        uses_demo_data=any(source == DEMO for source, _ in locations.values()),
    )
