"""Starting diagnosis sessions."""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from diagnosis.engines import ENGINE_NAMES
from diagnosis.models import DiagnosisSession

SESSION_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_QUERY_CHARS = 2000


def session_start(
    *,
    query: str,
    owner=None,
    engine: str | None = None,
    session_id: str | None = None,
    kind: str = DiagnosisSession.Kind.CHAT,
    run_inline: bool = False,
) -> DiagnosisSession:
    """Create a PENDING session and run it: in the background (django-q2), or inline for the CLI."""
    query = (query or "").strip()
    engine = engine or settings.DIAGNOSIS["ENGINE"]
    errors = {}
    if not query:
        errors["message"] = "问题不能为空"
    elif len(query) > MAX_QUERY_CHARS:
        errors["message"] = f"问题过长（最多 {MAX_QUERY_CHARS} 字）"
    if engine not in ENGINE_NAMES:
        errors["engine"] = f"未知引擎 {engine!r}，可选：{', '.join(ENGINE_NAMES)}"
    if session_id is not None:
        if not SESSION_ID_PATTERN.match(session_id):
            errors["session_id"] = "session_id 只能包含字母、数字、-、_、.，最长 64 个字符"
        elif DiagnosisSession.objects.filter(session_id=session_id).exists():
            errors["session_id"] = f"会话 {session_id} 已存在"
    if errors:
        raise ValidationError(errors)

    fields = {"query": query, "owner": owner, "engine": engine, "kind": kind}
    if session_id is not None:
        fields["session_id"] = session_id
    session = DiagnosisSession.objects.create(**fields)

    if run_inline:
        from diagnosis.pipeline.orchestrator import session_run

        return session_run(session_pk=session.pk, evaluate_inline=True)
    transaction.on_commit(lambda: _enqueue(session.pk))
    return session


def _enqueue(session_pk: int) -> None:
    from django_q.tasks import async_task

    async_task("diagnosis.tasks.session_run_task", session_pk, task_name=f"diagnosis-session-{session_pk}")
