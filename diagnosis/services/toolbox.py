"""The executor's tool access: every call recorded as a ToolInvocation, bounded per round.

A turn's calls (`call_many`) run concurrently (bounded) and are recorded together in one commit,
which also tells the live view the session is gathering evidence; `call` is a turn of one. The rows
and messages it recorded are kept (`CallsKept`, one per session), so no round reads them back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from django.db import connection

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.interfaces import Stage
from diagnosis.services.invocations import invocations_record, tool_message_build
from tools.base import all_tools
from tools.evidence_kinds import current_name

BUDGET_SPENT_ERROR = "本轮工具调用次数已用完，请基于已获得的证据作答"


def invocation_message(invocation: ToolInvocation) -> dict:
    """The tool message the model sees, plus the arguments (so a later round can tell what was searched)."""
    return tool_message_build(invocation=invocation) | {"arguments": invocation.input}


class CallsKept:
    """The calls of a session as its toolboxes recorded them, each with the message it returned: a round
    reads its results from here instead of reading the rows back from the database."""

    def __init__(self) -> None:
        self._calls: list[tuple[ToolInvocation, dict]] = []

    def kept(self, invocations: Sequence[ToolInvocation], messages: Sequence[dict]) -> None:
        self._calls += zip(invocations, messages, strict=True)

    def invocations(self) -> list[ToolInvocation]:
        return [invocation for invocation, _message in self._calls]

    def messages_before(self, *, round: int) -> list[dict]:
        return [message for invocation, message in self._calls if invocation.round < round]


class RecordingToolbox:
    def __init__(
        self,
        *,
        session: DiagnosisSession,
        round: int,
        max_calls: int,
        concurrency: int = 4,
        kept: CallsKept | None = None,
    ) -> None:
        self.session = session
        self.round = round
        self.remaining_calls = max_calls
        self.concurrency = max(1, concurrency)
        self.kept = kept or CallsKept()
        self._budget_lock = threading.Lock()

    @property
    def parallel_safe(self) -> bool:
        # Another thread records through its own connection, which cannot see the rows of a
        # transaction still open on this one (an eval case, a test): then calls run one by one here.
        return not connection.in_atomic_block

    def call(self, tool_name: str, arguments: dict) -> dict:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[dict]:
        """The messages of the calls, in order; calls past the round's budget are refused, not run."""
        with self._budget_lock:
            allowed = list(calls[: max(self.remaining_calls, 0)])
            self.remaining_calls -= len(allowed)
        recorded = (
            invocations_record(
                session=self.session,
                round=self.round,
                calls=allowed,
                concurrency=self.concurrency if self.parallel_safe else 1,
                recorded=self.kept.invocations(),
                current_stage=Stage.EXECUTOR.value,
                rounds=self.round,
            )
            if allowed
            else []
        )
        messages = [invocation_message(invocation) for invocation in recorded]
        self.kept.kept(recorded, messages)
        refused = [_refused(tool_name) for tool_name, _arguments in calls[len(allowed) :]]
        return messages + refused

    def tool_definitions(self) -> list[dict]:
        return [tool.openai_tool() for tool in all_tools() if tool.available()]


def _refused(tool_name: str) -> dict:
    return {
        "invocation_id": None,
        "tool_name": current_name(tool_name),
        "success": False,
        "evidence_status": "failed",
        "evidence_refs": [],
        "error": BUDGET_SPENT_ERROR,
    }
