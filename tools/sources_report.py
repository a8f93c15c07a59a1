"""Which source answers each evidence tool, and whether it is reachable (`manage.py sources`)."""

from __future__ import annotations

from dataclasses import dataclass

from tools.base import all_tools
from tools.sources import configured_source, provenance_of, source_for


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
        if not tool.is_evidence:
            continue
        source = source_for(tool.name)
        kind, location = provenance_of(source)
        configured = configured_source(tool.name) is not None
        note = ""
        if not tool.available():
            status = "unavailable: 需要 DIAGNOSIS_PROMETHEUS_URL"
        else:
            try:
                if hasattr(source, "check"):
                    source.check()
                status = "ok"
                skipped = source.skipped() if hasattr(source, "skipped") else 0
                note = f"（跳过 {skipped} 个文件，原因见日志警告）" if skipped else ""
            except Exception as exc:  # whatever the source raised is the cause to show
                status = f"unreachable: {getattr(exc, 'cause', exc)}"
        lines.append(SourceLine(tool.name, kind, location or "-", configured, status, note))
    return lines


def sources_in_use() -> list[tuple[str, str, str]]:
    """(tool, source kind, location) of every evidence tool, without contacting any source."""
    return [(tool.name, *provenance_of(source_for(tool.name))) for tool in all_tools() if tool.is_evidence]
