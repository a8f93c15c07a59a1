"""A real Prometheus (Debian's promtool and prometheus) over an hour of one incident: every service's
CPU counter and memory gauge flat, then one service's CPU climbing from a given minute. The samples end
at the real clock's now (Prometheus keeps blocks relative to it); `now` is what DEMO_NOW pins."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.utils import timezone

from diagnosis.evaluation.nezha.openmetrics import CPU, MEMORY
from diagnosis.evaluation.nezha.prometheus import blocks_created, metadata_exposition, prometheus_serving

STEP = timedelta(seconds=30)
HOUR = timedelta(hours=1)
IDLE_CORES, BUSY_CORES = 0.12, 0.93
MEMORY_BYTES = 300 * 1024 * 1024


@dataclass(frozen=True)
class Incident:
    url: str
    now: datetime
    onset: datetime


def incident_openmetrics(
    services: Sequence[str], *, busy: str, onset: datetime, start: datetime, end: datetime
) -> str:
    lines = [
        f"# TYPE {CPU.name.removesuffix('_total')} counter",
        f"# HELP {CPU.name.removesuffix('_total')} {CPU.help}",
    ]
    for index, service in enumerate(services):
        labels = f'namespace="shop",pod="{service}-{index}",service="{service}"'
        used, at = 0.0, start
        while at <= end:
            lines.append(f"{CPU.name}{{{labels}}} {used!r} {at.timestamp():.3f}")
            cores = BUSY_CORES if service == busy and at >= onset else IDLE_CORES + 0.01 * (index % 3)
            used += cores * STEP.total_seconds()
            at += STEP
    lines += [f"# TYPE {MEMORY.name} gauge", f"# HELP {MEMORY.name} {MEMORY.help}"]
    for index, service in enumerate(services):
        labels = f'namespace="shop",pod="{service}-{index}",service="{service}"'
        at = start
        while at <= end:
            wobble = 1024 * 1024 * ((at.minute + index) % 2)
            lines.append(f"{MEMORY.name}{{{labels}}} {MEMORY_BYTES + wobble} {at.timestamp():.3f}")
            at += STEP
    return "\n".join([*lines, "# EOF"]) + "\n"


@contextmanager
def incident_served(services: Sequence[str], *, busy: str, minutes_ago: int = 10) -> Iterator[Incident]:
    """Prometheus over the last hour, `busy`'s CPU up from `minutes_ago` minutes before now (on the minute)."""
    now = timezone.now().replace(second=0, microsecond=0)
    onset = now - timedelta(minutes=minutes_ago)
    with tempfile.TemporaryDirectory(prefix="incident-") as folder:
        work = Path(folder)
        text = work / "incident.om.txt"
        text.write_text(
            incident_openmetrics(services, busy=busy, onset=onset, start=now - HOUR, end=now),
            encoding="utf-8",
        )
        tsdb = blocks_created(text, into=work / "tsdb")
        with prometheus_serving(tsdb, metadata=metadata_exposition([CPU, MEMORY]), workdir=work) as url:
            yield Incident(url=url, now=now, onset=onset)
