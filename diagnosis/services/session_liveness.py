"""How a running session shows it is alive, so a worker that died with it is noticed within a minute
(issue 14): the worker running a session touches its `updated_at` every few seconds; a RUNNING session
silent for longer than `DIAGNOSIS["WORKER_LOST_AFTER_SECONDS"]` has lost its worker (killed, out of
memory, host gone), whatever broker delivered it, and the reaper or a re-delivery of its task fails it.

The same thread carries the live view's progress (`SessionProgress`: the stage and round the pipeline is
in): the pipeline only sets it in memory, and the thread writes it at most once every
`PROGRESS_SECONDS`, when it changed. A session's stages so cost no commits of their own, and a slow one
(the model thinking) still shows where it is within a second."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from diagnosis.models import DiagnosisSession

logger = logging.getLogger(__name__)
# How stale the live view's stage may be: a stage shorter than this may never be shown.
PROGRESS_SECONDS = 1.0


@dataclass
class SessionProgress:
    """Where the running pipeline is; set by the pipeline's thread, written by the heartbeat's."""

    stage: str = ""
    round: int = 0

    def columns(self) -> dict:
        return {"current_stage": self.stage, "rounds": self.round}


def lost_before(*, now: datetime | None = None) -> datetime:
    """A RUNNING session last touched before this instant has no live worker."""
    return (now or timezone.now()) - timedelta(seconds=settings.DIAGNOSIS["WORKER_LOST_AFTER_SECONDS"])


def session_is_lost(session: DiagnosisSession) -> bool:
    return session.status == DiagnosisSession.Status.RUNNING and session.updated_at < lost_before()


@contextmanager
def session_heartbeat(*, session_pk: int, progress: SessionProgress | None = None) -> Iterator[None]:
    """Touch the RUNNING session every `DIAGNOSIS["HEARTBEAT_SECONDS"]` while the block runs, and write
    `progress` when it changed (a thread with its own connection, one autocommit UPDATE a beat: no
    transaction stays open)."""
    interval = settings.DIAGNOSIS["HEARTBEAT_SECONDS"]
    stop = threading.Event()
    tick = min(interval, PROGRESS_SECONDS) if progress is not None else interval

    def beat() -> None:
        written = progress.columns() if progress is not None else {}
        last_beat = time.monotonic()
        try:
            while not stop.wait(tick):
                columns = progress.columns() if progress is not None else {}
                changed = {name: value for name, value in columns.items() if written.get(name) != value}
                if not changed and time.monotonic() - last_beat < interval:
                    continue
                try:
                    DiagnosisSession.objects.filter(
                        pk=session_pk, status=DiagnosisSession.Status.RUNNING
                    ).update(**changed, updated_at=timezone.now())
                    written |= changed
                    last_beat = time.monotonic()
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
