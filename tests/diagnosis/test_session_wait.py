"""Waiting for a session the worker runs (the MCP `diagnose` over HTTP): until it ends or the deadline
passes, reading its status with no transaction held open."""

import time

import pytest
from django.db import connection

from diagnosis.models import DiagnosisSession
from diagnosis.selectors.sessions import WAIT_POLL_SECONDS, session_ended_within
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

Status = DiagnosisSession.Status


def test_an_ended_session_is_returned_at_once(monkeypatch):
    session = DiagnosisSessionFactory(status=Status.FAILED)
    monkeypatch.setattr(time, "sleep", lambda seconds: pytest.fail("waited for an ended session"))

    assert session_ended_within(session_pk=session.pk, seconds=30).status == Status.FAILED


# Committed as it goes, as in production: the test's own transaction would hide one held open.
@pytest.mark.django_db(transaction=True)
def test_a_session_the_worker_ends_meanwhile_is_returned_as_it_ended(monkeypatch):
    session = DiagnosisSessionFactory(status=Status.RUNNING)
    naps: list[float] = []

    def worker_runs_on(seconds: float) -> None:
        # Nothing is held open while the worker writes: each status read was a statement of its own.
        assert not connection.in_atomic_block
        naps.append(seconds)
        if len(naps) == 2:
            DiagnosisSession.objects.filter(pk=session.pk).update(status=Status.COMPLETED, answer="结论：…")

    monkeypatch.setattr(time, "sleep", worker_runs_on)

    waited = session_ended_within(session_pk=session.pk, seconds=30)

    assert (waited.status, waited.answer) == (Status.COMPLETED, "结论：…")
    assert naps == [WAIT_POLL_SECONDS, WAIT_POLL_SECONDS]


def test_past_the_deadline_the_session_is_returned_as_it_is():
    session = DiagnosisSessionFactory(status=Status.PENDING)
    started = time.monotonic()

    waited = session_ended_within(session_pk=session.pk, seconds=0.6)

    assert waited.status == Status.PENDING
    assert 0.6 <= time.monotonic() - started < 0.6 + 2 * WAIT_POLL_SECONDS + 0.5
