"""The webhook's failed-token limit, counted in the database that every web process shares.

DRF's `SimpleRateThrottle` keeps its history in the cache, which without Redis is each gunicorn
process's own memory: a limit of 10 failed tokens a minute let 17 to 21 through behind 2 workers. Here
the history is `FailedTokenAttempt` rows, so the limit is the configured one however many processes or
hosts serve the site, with or without Redis. The rate stays DRF's string ("10/min"), parsed by DRF.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from aiops.models import FailedTokenAttempt


class FailedTokenThrottle(SimpleRateThrottle):
    """`DIAGNOSIS["ALERTMANAGER_FAILED_TOKEN_RATE"]` failed token attempts per client address. Counts
    failures only (`failure_count`), so Alertmanager's own traffic never uses it up; `exhausted` reads
    the count without adding to it."""

    scope = "alertmanager_failed_token"

    def get_rate(self) -> str:
        return settings.DIAGNOSIS["ALERTMANAGER_FAILED_TOKEN_RATE"]

    def get_cache_key(self, request: Request, view) -> str:
        """The client address, hashed: counted, never kept."""
        return hashlib.sha256(self.get_ident(request).encode()).hexdigest()

    def exhausted(self, request: Request) -> bool:
        """Whether the address has used up its failures; reads the history `wait` tells from."""
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        # The newest `num_requests` suffice: once the oldest of them leaves the period, one more fits.
        self.history = [
            at.timestamp()
            for at in FailedTokenAttempt.objects.filter(address=self.key, at__gt=self._at(-self.duration))
            .order_by("-at")
            .values_list("at", flat=True)[: self.num_requests]
        ]
        return len(self.history) >= self.num_requests

    def failure_count(self) -> None:
        """Count the failed attempt `exhausted` found room for. Attempts past the period are removed as
        new ones arrive, so the table holds one period's."""
        FailedTokenAttempt.objects.create(address=self.key, at=self._at(0))
        FailedTokenAttempt.objects.filter(at__lte=self._at(-self.duration)).delete()
        self.history.insert(0, self.now)

    def _at(self, offset_seconds: float) -> datetime:
        return datetime.fromtimestamp(self.now, tz=UTC) + timedelta(seconds=offset_seconds)
