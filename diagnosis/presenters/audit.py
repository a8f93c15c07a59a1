"""A session's admin page beyond its own columns, with each round's claims as the page shows them."""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.presenters.evidence import RoundView, round_view, widened
from diagnosis.selectors.audit import SessionAudit


@dataclass(frozen=True)
class AuditView(SessionAudit):
    rounds: list[RoundView]


def audit_view(*, audit: SessionAudit) -> AuditView:
    return widened(AuditView, audit, rounds=[round_view(each) for each in audit.rounds])
