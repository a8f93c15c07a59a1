"""What the investigation tests share: a conclusion checked by the gatekeeper as it was said and with
one of its numbers changed."""

from __future__ import annotations

from diagnosis.pipeline.derived import derived_failures
from diagnosis.pipeline.investigation.conclusion import Said
from diagnosis.pipeline.slot import Slot


def recomputed_failures(said: Said, results: list, *, after: str, changed_to: str) -> tuple[list, list]:
    """The gatekeeper's failures for the conclusion as said, and for it with its first candidate's
    level after (`→ <after>` in its text, and its derived number) changed to `changed_to`."""
    slot = Slot.model_construct(
        conclusion=said.text, bindings=said.bindings, derived=said.derived, inference=True
    )
    tampered = [n.model_copy(update={"said": changed_to}) if n.said == after else n for n in said.derived]
    text = said.text.replace(f"→ {after}", f"→ {changed_to}", 1)
    changed = slot.model_copy(update={"conclusion": text, "derived": tampered})
    return derived_failures(slot, invocations=results), derived_failures(changed, invocations=results)
