"""The executor's tool access: every call recorded as a ToolInvocation, bounded per round."""

from __future__ import annotations

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.services.invocations import invocation_record, tool_message_build
from tools.base import all_tools


def invocation_message(invocation: ToolInvocation) -> dict:
    """The tool message the model sees, plus the arguments (so a later round can tell what was searched)."""
    return tool_message_build(invocation=invocation) | {"arguments": invocation.input}


class RecordingToolbox:
    def __init__(self, *, session: DiagnosisSession, round: int, max_calls: int) -> None:
        self.session = session
        self.round = round
        self.remaining_calls = max_calls

    def call(self, tool_name: str, arguments: dict) -> dict:
        if self.remaining_calls <= 0:
            return {
                "invocation_id": None,
                "tool_name": tool_name,
                "success": False,
                "evidence_status": "failed",
                "evidence_refs": [],
                "error": "本轮工具调用次数已用完，请基于已获得的证据作答",
            }
        self.remaining_calls -= 1
        invocation = invocation_record(
            session=self.session, round=self.round, tool_name=tool_name, arguments=arguments
        )
        return invocation_message(invocation)

    def tool_definitions(self) -> list[dict]:
        return [tool.openai_tool() for tool in all_tools() if tool.available()]
