"""Its row in the registry (`tools.evidence.registry.KINDS`): the tool's name and the product's words for it."""

from __future__ import annotations

from tools.evidence.kind import EvidenceKind

CLOCK = EvidenceKind(package="clock", tool="get_current_datetime", label="时间查询", noun="时间")
