"""Signal receivers of the django-q2 worker: the stale-session reaper kept scheduled however the product
is deployed, and each task's trace spans exported before the worker takes the next task."""

import logging

from django.conf import settings
from django.db import DatabaseError

from diagnosis import tracing
from diagnosis.services.sessions_maintenance import stale_sessions_fail, stale_sessions_schedule_ensure

logger = logging.getLogger(__name__)


def reaper_schedule_on_migrate(*, using: str = "default", **kwargs) -> None:
    if using == "default":
        stale_sessions_schedule_ensure()


def reaper_on_worker_start(**kwargs) -> None:
    """A worker process starting (first start, or replacing one that died): schedule the reaper and
    reap once, so sessions a dead worker left RUNNING end without waiting for the schedule."""
    try:
        stale_sessions_schedule_ensure()
        reaped = stale_sessions_fail(older_than_seconds=settings.DIAGNOSIS["STALE_AFTER_SECONDS"])
    except DatabaseError:  # a worker must start even while the database is busy; the schedule reaps later
        logger.warning("stale-session reaper not run at worker start", exc_info=True)
        return
    if reaped:
        logger.warning("worker start: %d stale sessions ended FAILED", reaped)


def traces_flush_after_task(**kwargs) -> None:
    """A worker process is stopped or recycled without running exit handlers: what a task traced is
    exported when it ends, not left in the batch."""
    tracing.flush()
