"""The evidence kinds, one row each: the only list of tools, the only place a tool's name is read.

Adding a kind is its package under tools/evidence/ (kind row, record, source protocol, tool) and one
entry in `KINDS`: the tools app imports each row's tool, the sources are configured by its package
name, and code elsewhere asks a kind (`ALERTS.owns(name)`, `kind_named(name).label`) and never
compares a tool's name as a string. Django-free: the pipeline, the services and the pages all read it.
"""

from __future__ import annotations

from tools.evidence.alerts.kind import ALERTS
from tools.evidence.clock.kind import CLOCK
from tools.evidence.kind import EvidenceKind
from tools.evidence.knowledge.kind import KNOWLEDGE
from tools.evidence.log_patterns.kind import LOG_PATTERNS
from tools.evidence.log_series.kind import LOG_SERIES
from tools.evidence.logs.kind import LOG_COUNTS, LOGS
from tools.evidence.metric_catalog.kind import CATALOG
from tools.evidence.series.kind import SERIES
from tools.evidence.source import Source
from tools.evidence.targets.kind import TARGETS
from tools.evidence.trace_calls.kind import TRACE_CALLS
from tools.evidence.trace_paths.kind import TRACE_PATHS

# One row per kind; its package holds the row, the record, the source protocol and the tool.
KINDS: tuple[EvidenceKind, ...] = (
    ALERTS,
    SERIES,
    TARGETS,
    LOGS,
    LOG_COUNTS,
    LOG_SERIES,
    LOG_PATTERNS,
    TRACE_CALLS,
    TRACE_PATHS,
    KNOWLEDGE,
    CATALOG,
    CLOCK,
)
# The steps a plan may name, in the order a plan lists them.
PLANNABLE_TOOLS: tuple[str, ...] = tuple(kind.tool for kind in KINDS if kind.plannable)


def kind_named(tool_name: str) -> EvidenceKind | None:
    """The kind a tool name (current or former) belongs to; None for a name no kind has."""
    return next((kind for kind in KINDS if kind.owns(tool_name)), None)


def tool_label(tool_name: str) -> str:
    """What people call a tool's call ("在 告警查询 中未检索到…"); an unknown name as it is."""
    kind = kind_named(tool_name)
    return kind.label if kind is not None else tool_name


def current_name(tool_name: str) -> str:
    """A former name read as today's; an unknown name as it is (it fails as unknown where called)."""
    kind = kind_named(tool_name)
    return kind.tool if kind is not None else tool_name


# The source protocols by the names settings use (`DIAGNOSIS["SOURCE_CLASSES"]`): the kinds' packages.
SOURCE_KINDS: dict[str, type[Source]] = {
    kind.package: kind.source for kind in KINDS if kind.source is not None
}


def kind_name(protocol: type[Source]) -> str:
    """The settings name of a source protocol."""
    return next(name for name, kind in SOURCE_KINDS.items() if kind is protocol)
