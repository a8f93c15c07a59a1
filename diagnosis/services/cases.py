"""Turning a verified session into a case: once per session, from verified material only.

The fields come from the same material the Composer was allowed to use in the final round
(`composer_material_build`): confirmed findings give the root cause, allowed evidence-gathering
actions the solution; service, alert name and error code come from the tool records behind those
findings' gatekeeper-passed citations, then from their fact tokens. The user-facing answer is
never copied: it may carry a disclaimer or a degraded template, and a case holds findings. Nor is
the question: it is one user's free text (issue 14 found "请立即执行 kubectl delete …" planted in a
title and served to everyone), so the title is the first verified root cause.

A case from a user's "useful" is a candidate until a reviewer approves it; a reviewer's own
promotion is approved at once. A session without a verified finding has nothing to keep.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession
from diagnosis.pipeline.composer import composer_material_from_record
from diagnosis.pipeline.contracts import NO_EVIDENCE_PATH, ComposerInput
from diagnosis.pipeline.facts import fact_tokens
from diagnosis.pipeline.records import verifier_record_read
from diagnosis.selectors.evidence import CheckedClaim, CitedEvidence, session_rounds
from diagnosis.selectors.self_evaluation import VERIFIER_EVALUATION, self_evaluation_of
from tools.configured_vocabulary import current_vocabulary
from tools.evidence.alerts.record import AlertRecord
from tools.evidence.logs.record import LogLine
from tools.evidence.record import EvidenceRecord
from tools.matching import groups_in

logger = logging.getLogger(__name__)

TITLE_CHARS = 100
NAME_CHARS = CaseLibrary._meta.get_field("service").max_length
ERROR_CODE = re.compile(r"(?:Error|Exception|Killed)$|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


@dataclass(frozen=True)
class CaseFields:
    fault_category: str
    title: str
    root_cause: str
    solution: str
    service: str
    alert_name: str
    error_code: str


def _unique(values) -> list[str]:
    return list(dict.fromkeys(value for value in values if value))


def _first(values) -> str:
    # Names come from tool records and can be longer than the column; PostgreSQL would refuse them.
    return next(iter(_unique(values)), "")[:NAME_CHARS]


def _said_text(record: EvidenceRecord) -> str:
    """What a record says in words: a log line's message, an alert's description."""
    if isinstance(record, LogLine):
        return record.message
    return record.description if isinstance(record, AlertRecord) else ""


def _bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _evidence_of(claim: CheckedClaim) -> list[CitedEvidence]:
    """The claim's gatekeeper-passed citations of a recorded finding. A "nothing found" citation
    (`NO_EVIDENCE_PATH`) quotes the tool's arguments, which may be the user's own words (a knowledge
    search is the question itself): it observes an absence and is never case material."""
    return [binding for binding in claim.bindings if binding.passed and binding.raw_path != NO_EVIDENCE_PATH]


def _verified_material(*, session: DiagnosisSession) -> ComposerInput | None:
    """The final round's Composer material, rebuilt from the stored verifier record."""
    record = self_evaluation_of(session=session).get(VERIFIER_EVALUATION)
    recorded = composer_material_from_record(query=session.query, record=record)
    if recorded is None:
        # A record from an older pipeline: without a verifiable record nothing counts as confirmed.
        logger.warning(
            "session %s has no readable verifier record; its case has no findings", session.session_id
        )
        return None
    return recorded.material


def _known_services(*, session: DiagnosisSession) -> set[str]:
    """The services the session's question was read against (its stored inventory)."""
    record = verifier_record_read(self_evaluation_of(session=session).get(VERIFIER_EVALUATION))
    return {name.lower() for name in (record.inventory.get("services") or [])} if record else set()


def _category(groups: set[str]) -> str | None:
    """Fault categories by synonym group, from the world vocabulary. First match wins: a pool
    exhaustion shows up as timeouts, so the vocabulary lists the specific category first."""
    categories = current_vocabulary().categories
    return next((c.category for c in categories if set(c.groups) & groups), None)


def _fault_category(alert_names: list[str], texts: list[str]) -> str:
    """An alert's name is a term of its topic ("KubePodCrashLooping"), so it decides; else the findings' words."""
    for alert_name in alert_names:
        if category := _category(groups_in(alert_name)):
            return category
    return _category(groups_in(" ".join(texts))) or "GENERAL"


def case_fields_extract(*, session: DiagnosisSession) -> CaseFields:
    material = _verified_material(session=session)
    findings = material.confirmed_findings if material else []
    inferences = material.reasonable_inferences if material else []
    finding_ids = {item["claim_id"] for item in findings}
    confirmed_ids = finding_ids | {item["claim_id"] for item in inferences}
    rounds = session_rounds(session=session)
    claims: list[CheckedClaim] = [
        claim
        for claim in (rounds[-1].claims if rounds else [])
        if claim.claim_id in confirmed_ids and _evidence_of(claim)
    ]
    bindings = [binding for claim in claims for binding in _evidence_of(claim)]
    records = [binding.record for binding in bindings if binding.record]
    texts = [
        *(claim.text for claim in claims),
        *(binding.excerpt for binding in bindings),
        *(_said_text(record) for record in records),
    ]
    tokens = [token for text in texts for token in fact_tokens(text)]
    alert_names = _unique(record.alert_name for record in records if isinstance(record, AlertRecord))
    known_services = _known_services(session=session)
    findings_first = sorted(claims, key=lambda claim: claim.claim_id not in finding_ids)
    root_causes = [
        claim.text for claim in claims if claim.claim_id in finding_ids and claim.claim_type == "root_cause"
    ] or [claim.text for claim in findings_first]
    return CaseFields(
        fault_category=_fault_category(alert_names, texts),
        title=root_causes[0][:TITLE_CHARS] if root_causes else "",
        root_cause=_bullets(root_causes),
        solution=_bullets(material.allowed_actions if material else []),
        service=_first(
            [record.service for record in records if isinstance(record, AlertRecord | LogLine)]
            + [token.surface for token in tokens if token.kind == "name" and token.value in known_services]
        ),
        alert_name=_first(alert_names),
        error_code=_first(
            token.surface
            for token in tokens
            if token.kind in ("code", "name") and ERROR_CODE.search(token.surface)
        ),
    )


def session_may_become_case(*, session: DiagnosisSession) -> bool:
    """Only a completed diagnosis has verified findings to keep; a failed one has none."""
    return session.status == DiagnosisSession.Status.COMPLETED


def case_create_from_session(
    *,
    session: DiagnosisSession,
    created_by: str = "system",
    source_type: str = CaseLibrary.SourceType.AUTO,
) -> tuple[CaseLibrary, bool]:
    """The session's case, created on first call and returned as is afterwards, whatever its status
    (also under a race: the unique `diagnosis_id` lets exactly one insert win and the loser reads the
    winner's row). AUTO cases start as candidates, MANUAL ones (a reviewer's promotion) approved.

    Raises `ValidationError` for a session that has not completed or has no verified finding.
    """
    if not session_may_become_case(session=session):
        raise ValidationError(_("Only a completed diagnosis can become a case."))
    existing = CaseLibrary.objects.filter(diagnosis_id=session.session_id).first()
    if existing is not None:
        return existing, False
    fields = case_fields_extract(session=session)
    if not fields.root_cause:
        raise ValidationError("该诊断没有经过核实的结论，不能沉淀为案例。")
    review = (
        {"status": CaseLibrary.Status.APPROVED, "reviewed_by": created_by, "reviewed_at": timezone.now()}
        if source_type == CaseLibrary.SourceType.MANUAL
        else {"status": CaseLibrary.Status.CANDIDATE}
    )
    return CaseLibrary.objects.get_or_create(
        diagnosis_id=session.session_id,
        defaults={**asdict(fields), "created_by": created_by, "source_type": source_type, **review},
    )


def case_withdraw_on_not_useful(*, session: DiagnosisSession) -> None:
    """The owner now finds the answer not useful: nothing of it stays served while their report is open.

    A candidate from their own earlier "useful" is withdrawn (deleted: nobody reviewed it, nothing
    served it); an approved case goes back to the candidates until a reviewer decides again; a
    rejected one stays rejected.
    """
    cases = CaseLibrary.objects.filter(diagnosis_id=session.session_id)
    cases.filter(status=CaseLibrary.Status.CANDIDATE, source_type=CaseLibrary.SourceType.AUTO).delete()
    cases.filter(status=CaseLibrary.Status.APPROVED).update(
        status=CaseLibrary.Status.CANDIDATE, reviewed_by="", reviewed_at=None
    )
