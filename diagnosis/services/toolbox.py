"""The executor's tool access: every call recorded as a ToolInvocation, bounded per round.

A turn's calls (`call_many`) run concurrently (bounded) and are recorded together in one commit,
which also tells the live view the session is gathering evidence; `call` is a turn of one. The rows
it recorded and the `ToolResult`s it returned are kept (`CallsKept`, one per session), so no round
reads them back.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

from django.db import connection

from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.pipeline.interfaces import Stage
from diagnosis.services.invocations import invocations_record
from tools.evidence.registry import current_name
from tools.evidence.result import ToolResult, not_run
from tools.evidence.tool import all_tools

BUDGET_SPENT_ERROR = "本轮工具调用次数已用完，请基于已获得的证据作答"


class CallsKept:
    """The calls of a session as its toolboxes recorded them, each with the result it returned: a round
    reads its results from here instead of reading the rows back from the database."""

    def __init__(self) -> None:
        self._calls: list[tuple[ToolInvocation, ToolResult]] = []

    def kept(self, invocations: Sequence[ToolInvocation], results: Sequence[ToolResult]) -> None:
        self._calls += zip(invocations, results, strict=True)

    def invocations(self) -> list[ToolInvocation]:
        return [invocation for invocation, _result in self._calls]

    def results(self) -> list[ToolResult]:
        return [result for _invocation, result in self._calls]

    def results_before(self, *, round: int) -> list[ToolResult]:
        return [result for invocation, result in self._calls if invocation.round < round]


class RecordingToolbox:
    def __init__(
        self,
        *,
        session: DiagnosisSession,
        round: int,
        max_calls: int,
        concurrency: int = 4,
        kept: CallsKept | None = None,
        at: datetime | None = None,
    ) -> None:
        self.session = session
        self.round = round
        self.remaining_calls = max_calls
        self.concurrency = max(1, concurrency)
        self.kept = kept or CallsKept()
        # The time its calls ask their sources about (a claim's own time); None: now.
        self.at = at
        self._budget_lock = threading.Lock()

    @property
    def parallel_safe(self) -> bool:
        # Another thread records through its own connection, which cannot see the rows of a
        # transaction still open on this one (an eval case, a test): then calls run one by one here.
        return not connection.in_atomic_block

    def call(self, tool_name: str, arguments: dict) -> ToolResult:
        return self.call_many([(tool_name, arguments)])[0]

    def call_many(self, calls: Sequence[tuple[str, dict]]) -> list[ToolResult]:
        """The results of the calls, in order; calls past the round's budget are refused, not run."""
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
                at=self.at,
                current_stage=Stage.EXECUTOR.value,
                rounds=self.round,
            )
            if allowed
            else []
        )
        results = [invocation.tool_result() for invocation in recorded]
        self.kept.kept(recorded, results)
        refused = [
            not_run(current_name(tool_name), error=BUDGET_SPENT_ERROR) for tool_name, _ in calls[len(allowed) :]
        ]
        return results + refused

    def tool_definitions(self) -> list[dict]:
        return [tool.openai_tool() for tool in all_tools() if tool.available()]

