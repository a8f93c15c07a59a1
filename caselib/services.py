"""Reviewing the case library: a reviewer approves a candidate (it becomes retrievable) or rejects it."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from caselib.models import CaseLibrary

Status = CaseLibrary.Status


def _cases_review(*, cases: QuerySet[CaseLibrary], status: str, reviewer: str) -> int:
    """Set `status` on the cases not already in it, recording who decided and when; how many changed."""
    return cases.exclude(status=status).update(
        status=status, reviewed_by=reviewer, reviewed_at=timezone.now()
    )


def cases_approve(*, cases: QuerySet[CaseLibrary], reviewer: str) -> int:
    """Approved cases are what `lookup_knowledge` serves to everyone (a rejected one may be approved later)."""
    return _cases_review(cases=cases, status=Status.APPROVED, reviewer=reviewer)


def cases_reject(*, cases: QuerySet[CaseLibrary], reviewer: str) -> int:
    """Rejected cases stay in the library for the record and are never served."""
    return _cases_review(cases=cases, status=Status.REJECTED, reviewer=reviewer)
