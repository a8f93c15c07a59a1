"""The executor's tool access: every call recorded as a ToolInvocation, bounded per round."""

from __future__ import annotations

import threading

from django.db import connection

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.services.invocations import invocation_record, tool_message_build
from tools.base import all_tools


def invocation_message(invocation: ToolInvocation) -> dict:
    """The tool message the model sees, plus the arguments (so a later round can tell what was searched)."""
    return tool_message_build(invocation=invocation) | {"arguments": invocation.input}


class RecordingToolbox:
    """Safe to call from several threads at once (the llm engine runs a turn's calls concurrently)."""

    def __init__(self, *, session: DiagnosisSession, round: int, max_calls: int) -> None:
        self.session = session
        self.round = round
        self.remaining_calls = max_calls
        self._budget_lock = threading.Lock()
        self._owner_thread = threading.get_ident()

    @property
    def parallel_safe(self) -> bool:
        # Another thread records through its own connection, which cannot see the rows of a
        # transaction still open on this one (an eval case, a test): then calls run one by one here.
        return not connection.in_atomic_block

    def call(self, tool_name: str, arguments: dict) -> dict:
        with self._budget_lock:
            exhausted = self.remaining_calls <= 0
            if not exhausted:
                self.remaining_calls -= 1
        if exhausted:
            return {
                "invocation_id": None,
                "tool_name": tool_name,
                "success": False,
                "evidence_status": "failed",
                "evidence_refs": [],
                "error": "本轮工具调用次数已用完，请基于已获得的证据作答",
            }
        try:
            invocation = invocation_record(
                session=self.session, round=self.round, tool_name=tool_name, arguments=arguments
            )
            return invocation_message(invocation)
        finally:
            if threading.get_ident() != self._owner_thread:
                connection.close()  # this worker thread's own connection; nobody else would close it

    def tool_definitions(self) -> list[dict]:
        return [tool.openai_tool() for tool in all_tools() if tool.available()]
