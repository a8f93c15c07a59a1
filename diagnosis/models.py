"""Diagnosis records: a session, its agent steps and its tool invocations."""

import uuid

from django.conf import settings
from django.db import models

from diagnosis.pipeline import routing
from diagnosis.pipeline.interfaces import Stage, StepStatus
from tools.evidence.receipt import Receipt
from tools.evidence.registry import kind_named
from tools.evidence.result import ToolResult


def new_session_id() -> str:
    return str(uuid.uuid4())


class DiagnosisSession(models.Model):
    class Status(models.TextChoices):
        PENDING = "PENDING", "排队中"
        RUNNING = "RUNNING", "执行中"
        COMPLETED = "COMPLETED", "已完成"
        FAILED = "FAILED", "失败"

    class OutputType(models.TextChoices):
        NORMAL = routing.OutputType.NORMAL.value, routing.OUTPUT_TYPE_LABELS[routing.OutputType.NORMAL]
        LOW_CONFID_WITH_DISCLAIMER = (
            routing.OutputType.LOW_CONFID_WITH_DISCLAIMER.value,
            routing.OUTPUT_TYPE_LABELS[routing.OutputType.LOW_CONFID_WITH_DISCLAIMER],
        )
        DEGRADED = routing.OutputType.DEGRADED.value, routing.OUTPUT_TYPE_LABELS[routing.OutputType.DEGRADED]

    class Feedback(models.TextChoices):
        USEFUL = "useful", "有用"
        NOT_USEFUL = "not_useful", "没用"

    class Kind(models.TextChoices):
        CHAT = "chat", "对话诊断"
        AIOPS = "aiops", "告警分析"
        # One evidence tool called on its own (an MCP client's query_promql, …), not a diagnosis.
        TOOL = "tool", "工具调用"
        # Claims written by someone else, each re-run against the sources and judged (`verify_claims`).
        VERIFY = "verify", "断言核对"

    session_id = models.CharField(max_length=64, unique=True, default=new_session_id)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CHAT)
    query = models.TextField()
    # The answer's Markdown (API, export, eval, older readers), rendered from `answer_record`.
    answer = models.TextField(blank=True, default="")
    # The answer as structure (`diagnosis.pipeline.answer.AnswerRecord`); {} for sessions stored before
    # it, and for analyses and tool sessions, whose answer is their report or result.
    answer_record = models.JSONField(default=dict, blank=True)
    output_type = models.CharField(max_length=32, choices=OutputType.choices, blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # What went wrong, for staff (the raw exception text); users see the answer's stable message,
    # which names `error_id`, the key to this row and to the log line with the traceback.
    error = models.TextField(blank=True, default="")
    error_id = models.CharField("错误编号", max_length=16, blank=True, default="", db_index=True)
    engine = models.CharField(max_length=16, default="rules")
    rounds = models.PositiveSmallIntegerField(default=0)
    # The stage the pipeline is in now, for the live view (planner / executor / ... / done).
    current_stage = models.CharField(max_length=16, blank=True, default="")
    # null = no feedback yet, distinct from any value a user can send.
    feedback = models.CharField(max_length=16, choices=Feedback.choices, null=True, blank=True)  # noqa: DJ001
    self_evaluation = models.JSONField(default=dict, blank=True)
    # Denormalised from self_evaluation at write time so reviewers can filter and sort cheaply.
    verdict = models.CharField(max_length=16, blank=True, default="")
    groundedness_score = models.FloatField(null=True, blank=True)
    gatekeeper_severity = models.CharField(max_length=16, blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="diagnosis_sessions",
    )
    # AIOps: an analysis session holds its alerts in `alert_scope`; each analysed
    # alert runs as a child session (`parent` set) through the ordinary verified pipeline.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    alert_scope = models.JSONField(default=dict, blank=True)
    # A verify session: the claims as the caller sent them (validated), what its run reads.
    claims_request = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "诊断会话"
        verbose_name_plural = "诊断会话"
        # Lists are newest first (`-created_at, -id`: a stable order for deep pages); each filter the
        # reviewers' admin and the API offer leads an index in that order, so a filtered page is one
        # index range however many sessions there are. The question's trigram index (PostgreSQL only)
        # is in migration 0006.
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="session_recent_idx"),
            models.Index(fields=["owner", "-created_at", "-id"], name="session_owner_recent_idx"),
            models.Index(fields=["status", "-created_at", "-id"], name="session_status_recent_idx"),
            models.Index(fields=["output_type", "-created_at", "-id"], name="session_output_type_recent_idx"),
            models.Index(fields=["verdict", "-created_at", "-id"], name="session_verdict_recent_idx"),
            models.Index(
                fields=["gatekeeper_severity", "-created_at", "-id"], name="session_gatekeeper_recent_idx"
            ),
            models.Index(fields=["feedback", "-created_at", "-id"], name="session_feedback_recent_idx"),
            models.Index(fields=["engine", "-created_at", "-id"], name="session_engine_recent_idx"),
            models.Index(fields=["kind", "-created_at", "-id"], name="session_kind_recent_idx"),
            # The review queue: the low verdicts and user reports `needs_review_condition` looks at.
            models.Index(
                fields=["-created_at", "-id"],
                condition=models.Q(verdict__in=("REJECT", "LOW_CONFID")) | models.Q(feedback="not_useful"),
                name="session_review_queue_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.query[:40]}"


class AgentStep(models.Model):
    class Agent(models.TextChoices):
        PLANNER = Stage.PLANNER.value, "规划"
        EXECUTOR = Stage.EXECUTOR.value, "取证"
        GATEKEEPER = Stage.GATEKEEPER.value, "核验引用"
        VERIFIER = Stage.VERIFIER.value, "校验"
        COMPOSER = Stage.COMPOSER.value, "撰写"

    class Status(models.TextChoices):
        OK = StepStatus.OK.value, "成功"
        FALLBACK = StepStatus.FALLBACK.value, "回退"
        SKIPPED = StepStatus.SKIPPED.value, "跳过"
        FAILED = StepStatus.FAILED.value, "失败"

    session = models.ForeignKey(DiagnosisSession, on_delete=models.CASCADE, related_name="steps")
    round = models.PositiveSmallIntegerField(default=1)
    agent = models.CharField(max_length=16, choices=Agent.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OK)
    thought = models.TextField(blank=True, default="")
    model_output = models.JSONField(default=dict, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    # Part of latency_ms spent waiting for the model; the rest is our own overhead.
    llm_wait_ms = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    llm_calls = models.PositiveSmallIntegerField(default=0)
    prompt_version = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name = "阶段记录"
        verbose_name_plural = "阶段记录"
        indexes = [models.Index(fields=["session", "round"], name="step_session_round_idx")]

    def __str__(self) -> str:
        return f"{self.session_id} r{self.round} {self.agent}"


class ToolInvocation(models.Model):
    """One recorded tool call. Its primary key is the `source_invocation_id` claims cite."""

    session = models.ForeignKey(DiagnosisSession, on_delete=models.CASCADE, related_name="tool_invocations")
    round = models.PositiveSmallIntegerField(default=1)
    tool_name = models.CharField(max_length=64)
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(default=dict, blank=True)
    success = models.BooleanField(default=True)
    error = models.TextField(blank=True, default="")
    retrieval_details = models.JSONField(default=dict, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    # Where the evidence came from: `prometheus`, `loki`, `runbooks`, `demo`, … and
    # the URL or folder; empty for helpers and unknown tools.
    source = models.CharField("来源", max_length=64, blank=True, default="")
    source_location = models.CharField("来源地址", max_length=500, blank=True, default="")
    # The call's evidence receipt (`tools.evidence.receipt.Receipt`): the requests its source sent and
    # the hash of its output; {} for calls recorded before receipts were kept.
    receipt = models.JSONField("证据回执", default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name = "工具调用"
        verbose_name_plural = "工具调用"
        indexes = [models.Index(fields=["session", "round"], name="invocation_session_round_idx")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.tool_name}"

    @property
    def evidence_status(self) -> str:
        return self.retrieval_details.get("evidence_status", "")

    @property
    def evidence_refs(self) -> list[dict]:
        return self.retrieval_details.get("evidence_refs", [])

    @property
    def is_demo(self) -> bool:
        return self.source == "demo"

    @property
    def receipt_record(self) -> Receipt | None:
        """The receipt typed; None for a call recorded before receipts were kept."""
        return Receipt.model_validate(self.receipt) if self.receipt else None

    def tool_result(self) -> ToolResult:
        """The call as the pipeline reads it: its stored JSON read once into typed records and refs."""
        return ToolResult.from_stored(
            tool_name=self.tool_name,
            kind=kind_named(self.tool_name),
            invocation_id=self.pk,
            arguments=self.input or {},
            success=self.success,
            output=self.output or {},
            retrieval_details=self.retrieval_details or {},
            source=self.source,
            error=self.error,
        )


class SessionReview(models.Model):
    """A reviewer's judgement of a session: agree or disagree with the verifier, with a note."""

    class Opinion(models.TextChoices):
        AGREE = "agree", "同意校验结论"
        DISAGREE = "disagree", "不同意校验结论"

    session = models.ForeignKey(DiagnosisSession, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    opinion = models.CharField(max_length=16, choices=Opinion.choices)
    expected_verdict = models.CharField(max_length=16, blank=True, default="")
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "审核意见"
        verbose_name_plural = "审核意见"
        permissions = [("review_session", "Can record a review of a diagnosis session")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.opinion}"
