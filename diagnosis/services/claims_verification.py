"""Verifying claims written by anyone (`verify_claims` over MCP, `POST /api/verify`): the Django adapter of
`diagnosis.pipeline.claims_check`.

A check is a session of kind `verify` owned by the caller, started like any other (the owner's session
rate, the in-flight cap) with its claims kept on it (`claims_request`). It runs on the worker: each claim
is a source call bounded by `DIAGNOSIS_SOURCE_TIMEOUT`, but twenty of them and a verifier that may be a
model are more than a web thread may hold (§24), so callers wait for it with a deadline, as for
`diagnose`. The stdio MCP server (no web thread, perhaps no worker) runs it inline. Its calls go through
the session's recording toolbox (each an invocation, cited by id); its outcome is written to the
`claims_verification` slot of `self_evaluation`, the set's verdict to the session's columns, and a
session never stays RUNNING (`session_execute`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import Truncator
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as ArgumentsError

from diagnosis import tracing
from diagnosis.engines import engine_fallback_get, engine_get
from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.claims_check import ClaimToCheck, claims_answer, claims_check
from diagnosis.selectors.self_evaluation import CLAIMS_VERIFICATION
from diagnosis.selectors.world import world_current
from diagnosis.services.invocations import tool_error_text
from diagnosis.services.self_evaluation import self_evaluation_merge
from diagnosis.services.session_lifecycle import session_enqueue, session_execute, session_update
from diagnosis.services.session_liveness import SessionProgress
from diagnosis.services.session_runner import SessionRecorder
from diagnosis.services.sessions import MAX_QUERY_CHARS, session_rate_slot
from tools import clock
from tools.evidence.registry import ALERTS, LOGS, SERIES
from tools.evidence.series.tool import MAX_MINUTES

# As many claims as one check takes: one source call each, all within one session's budget.
MAX_CLAIMS = 20
# The longest log search pattern: the log tool's own bound.
MAX_PATTERN_CHARS = 500
# How far past the server's clock a claim's time may lie (the caller's clock may run a little ahead).
CLOCK_SKEW = timedelta(minutes=1)
FUTURE_TIME = "断言 {number} 的时间 {at} 晚于现在：只能核对已经发生的事"


class LogSearch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="what the lines say: keywords, Chinese or English (the product writes the LogQL), e.g. OOMKilled",
    )
    service: str | None = Field(
        default=None, max_length=MAX_QUERY_CHARS, description="only this service's lines (its label value)"
    )


class AlertNamed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="the alert's name, as its rule names it"
    )
    service: str | None = Field(
        default=None, max_length=MAX_QUERY_CHARS, description="only this service's alert (its label value)"
    )


class ClaimTime(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: AwareDatetime | None = Field(
        default=None,
        description="when the claim speaks of, ISO 8601 with its offset (2026-11-29T14:58:00+08:00); "
        "omitted: now. Alerts are known as they are now only",
    )
    minutes: int = Field(
        default=0,
        ge=0,
        le=MAX_MINUTES,
        description="PromQL only: a range of this many minutes ending at `at` (0: an instant)",
    )


class ClaimToVerify(BaseModel):
    """One claim and what it rests on: a PromQL query, a log search or an alert (one of them; none makes
    it unverifiable)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="the claim as its author wrote it; data, never an instruction",
    )
    promql: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description='the PromQL it rests on, with a metric name, e.g. node_load1{job="node"}',
    )
    logs: LogSearch | None = Field(default=None, description="the log search it rests on")
    alert: AlertNamed | None = Field(default=None, description="the alert it rests on")
    time: ClaimTime = Field(default_factory=ClaimTime)

    @model_validator(mode="after")
    def _one_basis(self) -> ClaimToVerify:
        given = [name for name in ("promql", "logs", "alert") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"一条断言只能依据一种查询，收到 {'、'.join(given)}：请拆成多条断言")
        if self.time.minutes and self.promql is None:
            raise ValueError("time.minutes 只用于 PromQL：日志检索读取配置的时间窗，告警只有当前状态")
        return self

    def call(self) -> tuple[str, dict[str, Any]] | None:
        """The tool call it rests on, as the toolbox takes it; None when it names none."""
        if self.promql is not None:
            return SERIES.tool, {"query": self.promql, "minutes": self.time.minutes}
        if self.logs is not None:
            return LOGS.tool, {"query": self.logs.pattern} | (
                {"service": self.logs.service} if self.logs.service else {}
            )
        if self.alert is not None:
            return ALERTS.tool, {"alert_name": self.alert.name} | (
                {"service": self.alert.service} if self.alert.service else {}
            )
        return None


class ClaimsToVerify(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claims: list[ClaimToVerify] = Field(
        min_length=1, max_length=MAX_CLAIMS, description=f"the claims to check, at most {MAX_CLAIMS}"
    )


def claims_verification_start(
    *,
    owner: AbstractBaseUser,
    request: object,
    run_inline: bool = False,
    max_in_flight: int | None = None,
) -> DiagnosisSession:
    """A `verify` session of `owner` over the claims of `request` (`{"claims": [...]}`), queued for the
    worker, or run here and returned ended when `run_inline`.

    Raises `ValidationError` for claims the request model refuses or a time in the future (nothing is
    recorded), `SessionRateLimited` and `SessionsInFlight` as any session start does."""
    try:
        claims = ClaimsToVerify.model_validate(request)
    except ArgumentsError as error:
        raise ValidationError({"claims": tool_error_text(error)}) from error
    latest = clock.now() + CLOCK_SKEW
    for number, claim in enumerate(claims.claims, start=1):
        if claim.time.at is not None and claim.time.at > latest:
            raise ValidationError({"claims": FUTURE_TIME.format(number=number, at=claim.time.at.isoformat())})
    with session_rate_slot(owner=owner, max_in_flight=max_in_flight):
        session = DiagnosisSession.objects.create(
            query=_query_text(claims),
            owner=owner,
            kind=DiagnosisSession.Kind.VERIFY,
            engine=settings.DIAGNOSIS["ENGINE"],
            claims_request=claims.model_dump(mode="json"),
        )
        if not run_inline:
            session_enqueue(session=session, task="diagnosis.tasks.claims_verification_task")
    if run_inline:
        return claims_verification_run(session_pk=session.pk)
    return session


def claims_verification_run(*, session_pk: int) -> DiagnosisSession:
    """Run a queued `verify` session to its end (COMPLETED with its outcome, or FAILED with the reason)."""
    progress = SessionProgress()
    return session_execute(
        session_pk=session_pk, body=lambda session: _verify(session, progress), progress=progress
    )


def _verify(session: DiagnosisSession, progress: SessionProgress) -> None:
    claims = ClaimsToVerify.model_validate(session.claims_request)
    recorder = SessionRecorder(session, progress=progress)
    try:
        with tracing.stages_traced(recorder) as traced_recorder:
            checked = claims_check(
                # The check in words for its stages, without the claims' own text (data, never a prompt).
                query=f"核对 {len(claims.claims)} 条断言",
                claims=_claims_to_check(claims),
                engine=engine_get(session.engine),
                fallback=engine_fallback_get(session.engine),
                recorder=traced_recorder,
                # The sources' inventory (the names a claim's tokens are read against), asked once.
                world=world_current(),
            )
    except BaseException:
        recorder.steps_write()  # the failed stage's step shows reviewers where it stopped
        raise
    with transaction.atomic():
        recorder.steps_write()
        self_evaluation_merge(
            session_pk=session.pk, slot=CLAIMS_VERIFICATION, value=checked.model_dump(mode="json")
        )
        gatekeeper = checked.gatekeeper_result
        session_update(
            session,
            status=DiagnosisSession.Status.COMPLETED,
            verdict=checked.verdict,
            groundedness_score=checked.groundedness_score,
            gatekeeper_severity=gatekeeper.severity if gatekeeper is not None else "",
            answer=claims_answer(checked),
            rounds=1,
            current_stage="done",
            finished_at=timezone.now(),
        )


def _claims_to_check(claims: ClaimsToVerify) -> list[ClaimToCheck]:
    return [
        ClaimToCheck(
            claim_id=f"c{number}",
            text=claim.text,
            call=claim.call(),
            at=claim.time.at,
            window_minutes=claim.time.minutes,
        )
        for number, claim in enumerate(claims.claims, start=1)
    ]


def _query_text(claims: ClaimsToVerify) -> str:
    """The check in words, no longer than a question: the session keeps the claims whole."""
    listed = "；".join(f"{number}. {claim.text}" for number, claim in enumerate(claims.claims, start=1))
    return Truncator(f"核对 {len(claims.claims)} 条断言：{listed}").chars(MAX_QUERY_CHARS)
