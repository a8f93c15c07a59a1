"""Starting diagnosis sessions."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.throttling import SimpleRateThrottle

from diagnosis.engines import ENGINE_NAMES
from diagnosis.models import DiagnosisSession
from diagnosis.services.session_lifecycle import session_enqueue
from diagnosis.services.session_runner import session_run
from tools.evidence.tool import MAX_TEXT_CHARS

SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Session ids are one namespace for everybody, so a taken id must be refused; the refusal is the same
# whoever holds it and says nothing about that session (not even that it "exists"), its owner or state.
SESSION_ID_TAKEN = "该 session_id 不可用，请换一个，或不填由服务生成"
MAX_QUERY_CHARS = MAX_TEXT_CHARS
# The rate limit weighs a user's AI Ops analysis as this many sessions (how many alerts one analysis
# diagnoses is `DIAGNOSIS_AIOPS_MAX_ALERTS`).
MAX_ANALYSED_ALERTS = 10
# How the message names each period DRF's rates know, by its length in seconds.
PERIOD_LABELS = {1: "秒", 60: "分钟", 3600: "小时", 86400: "天"}


class SessionRateLimited(Exception):
    """The owner started as many sessions as `DIAGNOSIS["CHAT_RATE"]` allows; retry in `retry_after` s."""

    def __init__(self, *, limit: int, period_label: str, retry_after: int):
        self.retry_after = retry_after
        self.message = f"发起诊断过于频繁（每{period_label}最多 {limit} 次），请 {retry_after} 秒后再试。"
        super().__init__(self.message)


class SessionsInFlight(Exception):
    """The owner already has `limit` sessions queued or running; a start is refused until one ends."""

    def __init__(self, *, limit: int):
        self.message = f"你已有 {limit} 个会话在排队或执行中（同时最多 {limit} 个），请等其中一个结束后再试。"
        super().__init__(self.message)


class SessionStartThrottle(SimpleRateThrottle):
    """`DIAGNOSIS["CHAT_RATE"]`, a DRF rate ("30/min"), per owner. Its history is the owner's top-level
    sessions in the database rather than a cache, so every entry point and process shares one budget
    and a check under the owner's row lock is atomic with the insert; an AI Ops analysis counts as the
    most alert sessions it may start."""

    scope = "chat"

    def get_rate(self) -> str:
        return settings.DIAGNOSIS["CHAT_RATE"]

    def parse_rate(self, rate: str | None) -> tuple[int, int]:
        try:
            num_requests, duration = super().parse_rate(rate)
        except (ValueError, KeyError, IndexError, AttributeError):
            num_requests = duration = None
        if not num_requests or num_requests < 1 or duration is None:
            raise ImproperlyConfigured(f'DIAGNOSIS["CHAT_RATE"]={rate!r}：应为 次数/周期，如 30/min')
        return num_requests, duration

    def allow_start(self, *, owner: AbstractBaseUser, cost: int) -> bool:
        """Whether `cost` more sessions fit; `history` (newest first, an analysis once per session it
        weighs) tells `wait` when they will."""
        self.now = self.timer()
        since = datetime.fromtimestamp(self.now - self.duration, tz=UTC)
        recent = (
            DiagnosisSession.objects.filter(owner=owner, parent__isnull=True, created_at__gt=since)
            .order_by("-created_at")
            .values_list("created_at", "kind")
        )
        # A single start never needs more than the whole budget, or it could never start at all.
        aiops_weight = min(MAX_ANALYSED_ALERTS, self.num_requests)
        self.history = [
            created_at.timestamp()
            for created_at, kind in recent
            for _ in range(aiops_weight if kind == DiagnosisSession.Kind.AIOPS else 1)
        ]
        self.cost = min(cost, self.num_requests)
        return len(self.history) + self.cost <= self.num_requests

    def wait(self) -> float:
        """Seconds until enough of the oldest sessions have left the period for the refused start."""
        excess = len(self.history) + self.cost - self.num_requests
        return self.history[-excess] + self.duration - self.now

    @property
    def period_label(self) -> str:
        return PERIOD_LABELS[self.duration]


def session_rate_check(*, owner: AbstractBaseUser | None, cost: int = 1) -> None:
    """Raise `SessionRateLimited` when starting `cost` more sessions would exceed the owner's rate.
    Sessions without an owner (CLI, eval, Alertmanager) are not limited."""
    if owner is None:
        return
    throttle = SessionStartThrottle()
    if not throttle.allow_start(owner=owner, cost=cost):
        raise SessionRateLimited(
            limit=throttle.num_requests,
            period_label=throttle.period_label,
            retry_after=max(1, math.ceil(throttle.wait())),
        )


def session_in_flight_check(*, owner: AbstractBaseUser | None, limit: int) -> None:
    """Raise `SessionsInFlight` when `limit` of the owner's sessions are queued or running."""
    if owner is None:
        return
    # The reaper ends a session PENDING past STALE_AFTER_SECONDS, and RUNNING that long after it
    # started: none created earlier than twice that is still unfinished, so the index range read is
    # the owner's recent sessions only, however many they have.
    since = timezone.now() - timedelta(seconds=2 * settings.DIAGNOSIS["STALE_AFTER_SECONDS"])
    unfinished = DiagnosisSession.objects.filter(
        owner=owner,
        parent__isnull=True,
        created_at__gt=since,
        status__in=(DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING),
    )
    if unfinished.count() >= limit:
        raise SessionsInFlight(limit=limit)


@contextmanager
def session_rate_slot(
    *, owner: AbstractBaseUser | None, cost: int = 1, max_in_flight: int | None = None
) -> Iterator[None]:
    """`session_rate_check` (and `session_in_flight_check` against `max_in_flight`, if given), then the
    block that creates the sessions, as one transaction the owner's other starts wait for: the owner's
    user row is locked (PostgreSQL), or the database's single writer is held from BEGIN (SQLite's
    immediate transactions), so concurrent starts cannot all pass the checks before any of them has
    inserted. Queued tasks go out when the block commits."""
    with transaction.atomic():
        if owner is not None:
            list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk"))
        session_rate_check(owner=owner, cost=cost)
        if max_in_flight is not None:
            session_in_flight_check(owner=owner, limit=max_in_flight)
        yield


def session_start(
    *,
    query: str,
    owner: AbstractBaseUser | None = None,
    engine: str | None = None,
    session_id: str | None = None,
    kind: str = DiagnosisSession.Kind.CHAT,
    run_inline: bool = False,
    max_in_flight: int | None = None,
) -> DiagnosisSession:
    """Create a PENDING session and run it: in the background (django-q2), or inline for the CLI.

    Raises `ValidationError` for a bad question, engine or session id (also one already taken),
    `SessionRateLimited` when the owner has started too many sessions lately, and `SessionsInFlight`
    when `max_in_flight` of the owner's sessions are queued or running.
    """
    query = (query or "").strip()
    engine = engine or settings.DIAGNOSIS["ENGINE"]
    errors = {}
    if not query:
        errors["message"] = "问题不能为空"
    elif len(query) > MAX_QUERY_CHARS:
        errors["message"] = f"问题过长（最多 {MAX_QUERY_CHARS} 字）"
    if engine not in ENGINE_NAMES:
        errors["engine"] = f"未知引擎 {engine!r}，可选：{', '.join(ENGINE_NAMES)}"
    if session_id is not None and not SESSION_ID_PATTERN.match(session_id):
        errors["session_id"] = "session_id 只能包含字母、数字、-、_、.，最长 64 个字符"
    if errors:
        raise ValidationError(errors)

    fields = {"query": query, "owner": owner, "engine": engine, "kind": kind}
    if session_id is not None:
        fields["session_id"] = session_id
    with session_rate_slot(owner=owner, max_in_flight=max_in_flight):
        try:
            # The unique column decides a taken id, also between two requests choosing it at once.
            with transaction.atomic():
                session = DiagnosisSession.objects.create(**fields)
        except IntegrityError as error:
            if session_id is None:
                raise
            raise ValidationError({"session_id": SESSION_ID_TAKEN}) from error
        if not run_inline:
            session_enqueue(session=session, task="diagnosis.tasks.session_run_task")

    if run_inline:
        return session_run(session_pk=session.pk, evaluate_inline=True)
    return session
