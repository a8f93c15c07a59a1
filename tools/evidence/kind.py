"""What an evidence kind is: its package, its tool's name and the product's words for it.

A kind is what a tool returns (alerts, series, targets, log lines, runbook sections) and how the
product speaks of it: the tool's name (and the names it had before, so recorded sessions and
shipped cases still read), the key of its record list in the output, the page's words for a call and
for a reference, whether a plan may name it and whether it is guidance rather than a fact. The rows
are in `tools.evidence.registry`. Django-free: the pipeline, the services and the pages all read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.evidence.record import EvidenceRecord
from tools.evidence.source import Source


@dataclass(frozen=True)
class EvidenceKind:
    # Its package under tools/evidence/ (record, source protocol, tool); also the key settings name its
    # source by (`DIAGNOSIS["SOURCE_CLASSES"]["alerts"]`).
    package: str
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
    # Its calls of one round are one topic in the trace summary whatever they ask (the alerts known
    # now); any other kind's topic is what its query names.
    one_topic_a_round: bool = False
    # The type of its records (each writes its own ref text); None for a helper.
    record: type[EvidenceRecord] | None = None
    # The protocol its source implements; None for a helper, which reads no source.
    source: type[Source] | None = None
    # What an answer says when no source serves it ("未配置日志源"): with any of the team's sources
    # configured, a kind without one is said to have none, never answered from the demo world.
    unconfigured: str = ""

    @property
    def tool_module(self) -> str:
        return f"tools.evidence.{self.package}.tool"

    def owns(self, tool_name: str) -> bool:
        return tool_name == self.tool or tool_name in self.former_names

    def reference_noun(self, raw_path: str, *, no_evidence_path: str) -> str:
        """The noun of a reference at `raw_path` of one of its calls."""
        if not self.other_path_noun or not raw_path:
            return self.noun
        if raw_path.startswith((f"$.{self.collection_key}", no_evidence_path)):
            return self.noun
        return self.other_path_noun
