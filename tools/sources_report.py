"""Which source answers each evidence tool, and whether it is reachable (`manage.py sources`)."""

from __future__ import annotations

from dataclasses import dataclass

from tools.evidence.tool import all_tools
from tools.sources import configured_source, settings_needed, source_for


@dataclass(frozen=True)
class SourceLine:
    tool: str
    source: str
    location: str
    # True when the environment configured it (an unreachable one is an error, not a default).
    configured: bool
    status: str
    # What the source left out, said beside its status (runbook files skipped).
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def source_lines() -> list[SourceLine]:
    lines = []
    for tool in all_tools():
        if tool.source_kind is None:
            continue
        source = source_for(tool.source_kind)
        if source is None:
            status = f"unavailable: 需要 {settings_needed(tool.source_kind)}"
            lines.append(SourceLine(tool.name, "-", "-", configured=False, status=status))
            continue
        kind, location = source.provenance()
        note = ""
        try:
            source.check()
            status = "ok"
            skipped = source.skipped()
            note = f"（跳过 {skipped} 个文件，原因见日志警告）" if skipped else ""
        except Exception as exc:  # whatever the source raised is the cause to show
            status = f"unreachable: {getattr(exc, 'cause', exc)}"
        configured = configured_source(tool.source_kind) is not None
        lines.append(SourceLine(tool.name, kind, location or "-", configured, status, note))
    return lines


def sources_in_use() -> list[tuple[str, str, str]]:
    """(tool, source kind, location) of every evidence tool, without contacting any source; an empty
    kind when no source answers the tool."""
    return [(tool.name, *tool.provenance()) for tool in all_tools() if tool.source_kind is not None]
