"""What a log source answers (Loki, the demo world, a fixture)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from tools.evidence.source import Source
from tools.logcounts import CountRequest, Line, LogCounts, counted_in_code, sample_of


@runtime_checkable
class LogSource(Source, Protocol):
    """`query_logs`: every matching line, newest first (the tool applies its `limit`)."""

    def query_logs(
        self, *, query: str, service: str | None, topic: str | None, now: datetime
    ) -> list[dict]: ...


@runtime_checkable
class CountingLogSource(Protocol):
    """A log source that counts its lines itself (`count_logs`): over the whole window with LogQL
    metric queries (Loki), or over every line it holds (the demo world, an evaluation case)."""

    def count_logs(self, *, request: CountRequest, now: datetime) -> LogCounts: ...


def logs_counted(source: LogSource, *, request: CountRequest, now: datetime) -> LogCounts:
    """The source's own count; a source that cannot count has the lines `query_logs` serves for the
    service counted in code, and the count says it is that sample."""
    if isinstance(source, CountingLogSource):
        return source.count_logs(request=request, now=now)
    if not request.service:
        raise ValueError("该日志源只能按服务统计：请指定服务")
    served = source.query_logs(query=request.service, service=request.service, topic=None, now=now)
    lines = [Line(message=str(line.get("message", "")), level=str(line.get("level", ""))) for line in served]
    return LogCounts(records=counted_in_code(lines, request, counted_over=sample_of(len(lines))))
