"""Writing the `self_evaluation` container one slot at a time.

Several writers share the container (the rule evaluation runs in the background while the
pipeline writes the verifier result), so each one re-reads it under a row lock and replaces only
its own slot: no writer can lose another's data.
"""

from django.db import transaction
from django.utils import timezone

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.self_evaluation import SLOTS, VERIFIER_EVALUATION, self_evaluation_wrapped


def _verifier_columns(value: dict) -> dict:
    """The columns reviewers filter and sort on, copied from the verifier slot."""
    gatekeeper_result = value.get("gatekeeper_result") or {}
    return {
        "verdict": value.get("verdict") or "",
        "groundedness_score": value.get("groundedness_score"),
        "gatekeeper_severity": gatekeeper_result.get("severity") or "",
    }


def self_evaluation_merge(*, session_pk: int, slot: str, value: dict) -> dict:
    """Replace one slot of the session's container and return the whole new container."""
    if slot not in SLOTS:
        raise ValueError(f"unknown self_evaluation slot: {slot!r} (expected one of {', '.join(SLOTS)})")
    with transaction.atomic():
        stored = (
            DiagnosisSession.objects.select_for_update()
            .values_list("self_evaluation", flat=True)
            .get(pk=session_pk)
        )
        container = self_evaluation_wrapped(raw=stored)
        container[slot] = value
        columns = {"self_evaluation": container, "updated_at": timezone.now()}
        if slot == VERIFIER_EVALUATION:
            columns.update(_verifier_columns(value))
        # update() rather than save(): only these columns, so concurrent status writes survive.
        DiagnosisSession.objects.filter(pk=session_pk).update(**columns)
    return container
