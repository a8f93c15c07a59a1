"""The asks' slots: each read by its kind from recorded tool output only, kept filled only where the
gatekeeper verifies every citation, and said as `结论` lines and `未能回答` gaps.

`calls.slot_calls_run` makes the calls the asks need (whichever engine runs: the executor starts from
their results), `slots_read` reads each ask's slot from those recorded results with the evidence ref
it rests on, and `slots_verified` keeps a slot filled only when the gatekeeper verifies every
citation of it against the session's recorded invocations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from diagnosis.pipeline.ask import Ask
from diagnosis.pipeline.asks.kind import SlotWorld
from diagnosis.pipeline.asks.registry import KINDS, ask_label
from diagnosis.pipeline.contracts import Claim
from diagnosis.pipeline.derived import derived_failures
from diagnosis.pipeline.facts import NO_NAMES, FactNames
from diagnosis.pipeline.gatekeeper import claims_checked
from diagnosis.pipeline.slot import CONCLUSION, Slot
from tools.evidence.result import ToolResult

QUOTED = re.compile(r"「[^」]*」")
# A claim restating a conclusion line: at least this share of it once plain, within it or this similar.
RESTATED_SHARE = 0.5
RESTATED_RATIO = 0.85
PUNCTUATION = re.compile(r"[\s\W_]+")


def slots_read(asks: Sequence[Ask], *, results: Sequence[ToolResult], world: SlotWorld) -> list[Slot]:
    return [KINDS[ask.kind].read(ask, results, world) for ask in asks]


def slots_verified(
    slots: Sequence[Slot], *, invocations: Sequence[ToolResult], names: FactNames = NO_NAMES
) -> list[Slot]:
    """A filled slot stays filled only when the gatekeeper verifies every citation it rests on and
    computes again every number it derived from a cited range result."""
    claims = [
        # Quoted log patterns are evidence, not the conclusion's own polarity.
        Claim(
            claim_id=f"slot-{i}",
            claim_type="observation",
            claim_text=QUOTED.sub("「」", s.said()),
            evidence_bindings=s.bindings,
        )
        for i, s in enumerate(slots)
        if s.filled and s.bindings
    ]
    result = claims_checked(claims, invocations=invocations, names=names)
    failed = {b.claim_id for b in result.checked_bindings if b.status == "fail"}
    failed |= {
        f"slot-{i}"
        for i, s in enumerate(slots)
        if s.filled and s.derived and derived_failures(s, invocations=invocations, names=names)
    }
    return [
        s.model_copy(update={"filled": False, "why": "引用未通过核验"}) if f"slot-{i}" in failed else s
        for i, s in enumerate(slots)
    ]


def conclusion_lines(slots: Sequence[Slot]) -> list[str]:
    return [slot.line() for slot in slots if slot.filled]


def slot_gap(slot: Slot) -> str:
    return f"未能回答：{ask_label(slot.ask)} — {slot.why}"


def coverage_gaps(slots: Sequence[Slot]) -> list[str]:
    return [slot_gap(slot) for slot in slots if not slot.filled]


def open_asks(slots: Sequence[Slot]) -> list[str]:
    """The asks code's slots do not settle: unfilled, or asking for reasoning (code's own inference on
    a cause is only a hedged pairing of its symptoms)."""
    return [ask_label(slot.ask) for slot in slots if not slot.filled or KINDS[slot.ask.kind].reasoned]


def restated_conclusion(text: str, slots: Sequence[Slot]) -> str:
    """The `结论` line of a filled slot that `text` restates, or "": a copy of most of the line (within it,
    or nearly the same text), never longer than it (a longer claim says something more)."""
    said = _plain(text)
    for slot in slots:
        line = _plain(slot.line()) if slot.filled else ""
        if not line or not len(line) * RESTATED_SHARE <= len(said) <= len(line):
            continue
        if said in line or SequenceMatcher(None, said, line).ratio() >= RESTATED_RATIO:
            return slot.line()
    return ""


def _plain(text: str) -> str:
    """The text without its `结论：` prefix, spaces and punctuation, lower-cased: how a copy is compared."""
    return PUNCTUATION.sub("", text.removeprefix(CONCLUSION)).lower()
