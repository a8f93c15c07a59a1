"""How a running session shows it is alive, so a worker that died with it is noticed within a minute
(issue 14): the worker running a session touches its `updated_at` every few seconds; a RUNNING session
silent for longer than `DIAGNOSIS["WORKER_LOST_AFTER_SECONDS"]` has lost its worker (killed, out of
memory, host gone), whatever broker delivered it, and the reaper or a re-delivery of its task fails it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from diagnosis.models import DiagnosisSession

logger = logging.getLogger(__name__)


def lost_before(*, now: datetime | None = None) -> datetime:
    """A RUNNING session last touched before this instant has no live worker."""
    return (now or timezone.now()) - timedelta(seconds=settings.DIAGNOSIS["WORKER_LOST_AFTER_SECONDS"])


def session_is_lost(session: DiagnosisSession) -> bool:
    return session.status == DiagnosisSession.Status.RUNNING and session.updated_at < lost_before()


@contextmanager
def session_heartbeat(*, session_pk: int) -> Iterator[None]:
    """Touch the RUNNING session every `DIAGNOSIS["HEARTBEAT_SECONDS"]` while the block runs (a thread
    with its own connection, one autocommit UPDATE a beat: no transaction stays open)."""
    interval = settings.DIAGNOSIS["HEARTBEAT_SECONDS"]
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                try:
                    DiagnosisSession.objects.filter(
                        pk=session_pk, status=DiagnosisSession.Status.RUNNING
                    ).update(updated_at=timezone.now())
                except Exception:  # a missed beat is retried at the next one
                    logger.warning("heartbeat of session %s not written", session_pk, exc_info=True)
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"heartbeat-{session_pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
