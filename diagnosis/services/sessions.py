"""Starting diagnosis sessions."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from diagnosis.engines import ENGINE_NAMES
from diagnosis.models import DiagnosisSession
from diagnosis.services.session_lifecycle import session_enqueue
from diagnosis.services.session_runner import session_run

SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Session ids are one namespace for everybody, so a taken id must be refused; the refusal is the same
# whoever holds it and says nothing about that session (not even that it "exists"), its owner or state.
SESSION_ID_TAKEN = "该 session_id 不可用，请换一个，或不填由服务生成"
MAX_QUERY_CHARS = 2000
# The rate limit weighs a user's AI Ops analysis as this many sessions (how many alerts one analysis
# diagnoses is `DIAGNOSIS_AIOPS_MAX_ALERTS`).
MAX_ANALYSED_ALERTS = 10
# DRF-style rate periods ("30/min" → 30 per 60 s), keyed by the period's first letter.
RATE_PERIODS = {"s": (1, "秒"), "m": (60, "分钟"), "h": (3600, "小时"), "d": (86400, "天")}


class SessionRateLimited(Exception):
    """The owner started as many sessions as `DIAGNOSIS["CHAT_RATE"]` allows; retry in `retry_after` s."""

    def __init__(self, *, limit: int, period_label: str, retry_after: int):
        self.retry_after = retry_after
        self.message = f"发起诊断过于频繁（每{period_label}最多 {limit} 次），请 {retry_after} 秒后再试。"
        super().__init__(self.message)


def _chat_rate() -> tuple[int, int, str]:
    """`DIAGNOSIS["CHAT_RATE"]` as (sessions, period in seconds, period label)."""
    rate = settings.DIAGNOSIS["CHAT_RATE"]
    count, _, period = rate.partition("/")
    if not count.isdigit() or int(count) < 1 or period[:1] not in RATE_PERIODS:
        raise ImproperlyConfigured(f'DIAGNOSIS["CHAT_RATE"]={rate!r}：应为 次数/周期，如 30/min')
    seconds, label = RATE_PERIODS[period[:1]]
    return int(count), seconds, label


def session_rate_check(*, owner: AbstractBaseUser | None, cost: int = 1) -> None:
    """Raise `SessionRateLimited` when starting `cost` more sessions would exceed the owner's rate.

    Counted from the database, so every entry point and process shares one limit: the owner's
    top-level sessions created within the period, an AI Ops analysis weighing as much as the most
    alert sessions it may start. Sessions without an owner (CLI, eval, Alertmanager) are not limited.
    """
    if owner is None:
        return
    limit, period_seconds, period_label = _chat_rate()
    now = timezone.now()
    recent = (
        DiagnosisSession.objects.filter(
            owner=owner, parent__isnull=True, created_at__gt=now - timedelta(seconds=period_seconds)
        )
        .order_by("created_at")
        .values_list("created_at", "kind")
    )
    # A single start never needs more than the whole budget, or it could never start at all.
    aiops_weight = min(MAX_ANALYSED_ALERTS, limit)
    weights = [
        (created_at, aiops_weight if kind == DiagnosisSession.Kind.AIOPS else 1)
        for created_at, kind in recent
    ]
    excess = sum(weight for _, weight in weights) + min(cost, limit) - limit
    if excess <= 0:
        return
    # Allowed again once enough of the oldest sessions have left the window (`cost` ≤ the sum).
    for created_at, weight in weights:
        excess -= weight
        if excess <= 0:
            wait = created_at + timedelta(seconds=period_seconds) - now
            raise SessionRateLimited(
                limit=limit, period_label=period_label, retry_after=max(1, math.ceil(wait.total_seconds()))
            )


@contextmanager
def session_rate_slot(*, owner: AbstractBaseUser | None, cost: int = 1) -> Iterator[None]:
    """`session_rate_check`, then the block that creates the sessions, as one transaction the owner's
    other starts wait for: the owner's user row is locked (PostgreSQL), or the database's single writer
    is held from BEGIN (SQLite's immediate transactions), so concurrent starts cannot all pass the check
    before any of them has inserted. Queued tasks go out when the block commits."""
    with transaction.atomic():
        if owner is not None:
            list(get_user_model().objects.select_for_update().filter(pk=owner.pk).values_list("pk"))
        session_rate_check(owner=owner, cost=cost)
        yield


def session_start(
    *,
    query: str,
    owner: AbstractBaseUser | None = None,
    engine: str | None = None,
    session_id: str | None = None,
    kind: str = DiagnosisSession.Kind.CHAT,
    run_inline: bool = False,
) -> DiagnosisSession:
    """Create a PENDING session and run it: in the background (django-q2), or inline for the CLI.

    Raises `ValidationError` for a bad question, engine or session id (also one already taken) and
    `SessionRateLimited` when the owner has started too many sessions lately.
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
    with session_rate_slot(owner=owner):
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
