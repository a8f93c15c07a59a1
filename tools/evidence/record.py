"""The base of the typed records the evidence tools return; each kind's package holds its record class.

A record is read from the JSON a source answered (and a recorded call stored) and written back to the
same JSON (`stored()`), key for key: raw paths such as `$.alerts[0]` and recorded sessions keep
pointing where they did. What only one source knows (an alert's `expr`, a log line's `instance`) is kept
as an extra field. `ref_text()` is the evidence text a claim quotes; nothing parses it back, a reader
reads the fields. Django-free: the pipeline reads these records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from tools.evidence.summary import SAMPLE_CHARS, bounded, clip


class EvidenceRecord(BaseModel, ABC):
    # Extra fields are what one source adds; they round-trip into the stored JSON.
    model_config = ConfigDict(extra="allow")

    @abstractmethod
    def ref_text(self) -> str:
        """The text of the evidence ref that cites this record."""

    def identity(self) -> str:
        """What names this record in two answers to one request (a series by its labels), so a replay
        can say what changed in it; by default its ref text, so a changed record is another record."""
        return self.ref_text()

    def stored(self) -> dict[str, Any]:
        """The record as the tool's output stores it: the keys it was read from, no defaults added."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def summary(cls, records: Sequence[Any], *, budget: int) -> str:
        """What a trace entry says of its hits' records within `budget` characters; by default each
        distinct ref text once."""
        return bounded(
            "", list(dict.fromkeys(clip(r.ref_text(), SAMPLE_CHARS) for r in records)), budget, "条"
        )
