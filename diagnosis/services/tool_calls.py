"""Evidence tools called on their own, outside a diagnosis (an MCP client's `query_promql`, …).

Each call is a session of kind `tool` owned by the caller that holds the one recorded invocation, so it
is listed, traced, rate-limited and reviewed like any other session, and its invocation is recorded
by the same code as a diagnosis's (evidence refs extracted at record time, provenance kept).
"""

from __future__ import annotations

import json

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.text import Truncator
from pydantic import ValidationError as ArgumentsError

from diagnosis.models import DiagnosisSession
from diagnosis.services.invocations import invocation_record, tool_error_text
from diagnosis.services.session_lifecycle import session_execute, session_update
from diagnosis.services.sessions import MAX_QUERY_CHARS, session_rate_slot
from tools.evidence.registry import tool_label
from tools.evidence.tool import UnknownToolError, get_tool


def tool_call_run(
    *, owner: AbstractBaseUser, tool_name: str, arguments: dict, max_in_flight: int | None = None
) -> DiagnosisSession:
    """Run one evidence tool call as a new `tool` session of `owner` and return it, COMPLETED with its
    invocation (a call the tool or its source failed is a recorded failure, as in a diagnosis) or
    FAILED with the stable message when recording itself failed.

    Raises `ValidationError` for an unknown tool, a helper that is no evidence tool, or arguments its
    model refuses (nothing is recorded), `SessionRateLimited` when the owner started too many
    sessions lately, and `SessionsInFlight` when `max_in_flight` of the owner's sessions are queued or
    running.
    """
    try:
        tool = get_tool(tool_name)
        tool.arguments_model.model_validate(arguments)
    except (UnknownToolError, ArgumentsError) as error:
        raise ValidationError({"arguments": tool_error_text(error)}) from error
    if not tool.is_evidence:
        raise ValidationError({"arguments": f"{tool_name} 不是证据工具"})
    with session_rate_slot(owner=owner, max_in_flight=max_in_flight):
        session = DiagnosisSession.objects.create(
            # The call in words, no longer than a question: the invocation keeps the arguments whole.
            query=Truncator(f"{tool_name} {json.dumps(arguments, ensure_ascii=False)}").chars(
                MAX_QUERY_CHARS
            ),
            owner=owner,
            kind=DiagnosisSession.Kind.TOOL,
            # No engine runs: the call is the whole session.
            engine="",
        )

    def record(session: DiagnosisSession) -> None:
        invocation = invocation_record(session=session, round=1, tool_name=tool_name, arguments=arguments)
        outcome = invocation.error or invocation.tool_result().said
        session_update(
            session,
            status=DiagnosisSession.Status.COMPLETED,
            # The tool named as people call it, written once here: the page shows the text as stored.
            answer=f"{tool_label(tool_name)}：{outcome}",
            current_stage="done",
            finished_at=timezone.now(),
        )

    return session_execute(session_pk=session.pk, body=record)
