"""The evidence kinds: one row each, the only place a tool's name and what it means are written.

A kind is what a tool returns (alerts, series, targets, log lines, runbook sections) and how the
product speaks of it: the tool's name (and the names it had before, so recorded sessions and
shipped cases still read), the key of its record list in the output, the page's words for a call and
for a reference, whether a plan may name it and whether it is guidance rather than a fact. Code
elsewhere asks a kind (`ALERTS.owns(name)`, `kind_named(name).label`) and never compares a tool's
name as a string. Django-free: the pipeline, the services and the pages all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.evidence_records import (
    AlertRecord,
    EvidenceRecord,
    LogLine,
    RunbookSection,
    SeriesRecord,
    TargetRecord,
)


@dataclass(frozen=True)
class EvidenceKind:
    # The tool's name as the model and the records see it now.
    tool: str
    # What the page calls one call of it ("在 告警查询 中未检索到…") and one of its references.
    label: str
    noun: str
    # The key of the record list in the tool's output; None for a helper, which gathers no evidence.
    collection_key: str | None = None
    # A planner may name it as a step (the plan's `tool`), beside the asks' own calls.
    plannable: bool = False
    # Guidance (runbooks, past cases): indirect support at best, never a current-incident fact.
    guidance: bool = False
    # What a reference outside the record list is called (a sample series beside the alerts).
    other_path_noun: str = ""
    # Names this tool had before; a recorded session or a shipped case that uses one still reads.
    former_names: tuple[str, ...] = ()
    # What one record is called in the totals of a cut output (`total_series`, `total_lines`); series
    # and lines have bounds of their own (`tools.bounds`), any other the records bound.
    counted_as: str = "records"
    # The type of its records (each writes its own ref text); None for a helper.
    record: type[EvidenceRecord] | None = None

    def owns(self, tool_name: str) -> bool:
        return tool_name == self.tool or tool_name in self.former_names

    def reference_noun(self, raw_path: str, *, no_evidence_path: str) -> str:
        """The noun of a reference at `raw_path` of one of its calls."""
        if not self.other_path_noun or not raw_path:
            return self.noun
        if raw_path.startswith((f"$.{self.collection_key}", no_evidence_path)):
            return self.noun
        return self.other_path_noun


ALERTS = EvidenceKind(
    tool="query_alerts",
    label="告警查询",
    noun="告警",
    collection_key="alerts",
    plannable=True,
    other_path_noun="指标",
    # Its name until issue 35: it returns alerts, the metrics tool is query_promql.
    former_names=("query_metrics",),
    counted_as="alerts",
    record=AlertRecord,
)
SERIES = EvidenceKind(
    tool="query_promql",
    label="指标查询",
    noun="指标",
    collection_key="series",
    counted_as="series",
    record=SeriesRecord,
)
TARGETS = EvidenceKind(
    tool="query_targets",
    label="抓取目标查询",
    noun="抓取目标",
    collection_key="targets",
    counted_as="targets",
    record=TargetRecord,
)
LOGS = EvidenceKind(
    tool="query_logs",
    label="日志查询",
    noun="日志",
    collection_key="logs",
    plannable=True,
    counted_as="lines",
    record=LogLine,
)
KNOWLEDGE = EvidenceKind(
    tool="lookup_knowledge",
    label="处理手册检索",
    noun="处理手册",
    collection_key="evidence_blocks",
    plannable=True,
    guidance=True,
    counted_as="blocks",
    record=RunbookSection,
)
CLOCK = EvidenceKind(tool="get_current_datetime", label="时间查询", noun="时间")

KINDS: tuple[EvidenceKind, ...] = (ALERTS, SERIES, TARGETS, LOGS, KNOWLEDGE, CLOCK)
# The steps a plan may name, in the order a plan lists them.
PLANNABLE_TOOLS: tuple[str, ...] = tuple(kind.tool for kind in KINDS if kind.plannable)


def kind_named(tool_name: str) -> EvidenceKind | None:
    """The kind a tool name (current or former) belongs to; None for a name no kind has."""
    return next((kind for kind in KINDS if kind.owns(tool_name)), None)


def current_name(tool_name: str) -> str:
    """A former name read as today's; an unknown name as it is (it fails as unknown where called)."""
    kind = kind_named(tool_name)
    return kind.tool if kind is not None else tool_name
