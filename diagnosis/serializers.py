"""Request validation and response shapes of the JSON API.

The chat response serializers only describe the shape for the OpenAPI schema (the views build those
bodies); `TraceSerializer` both produces the trace JSON and documents it.
"""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.selectors.sessions import ROW_QUERY_CHARS, row_query
from diagnosis.services.invocations import FAILED, NO_EVIDENCE, NOT_EVIDENCE, SUPPORTED
from diagnosis.services.reviews import VERDICTS


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
        help_text="Slots rule_evaluation, verifier_evaluation, aiops_rule_evaluation, one writer each."
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
