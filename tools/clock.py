"""The tools' notion of "now": pinned by `DIAGNOSIS["DEMO_NOW"]` (demos, tests), else the real clock."""

from datetime import datetime

from django.conf import settings
from django.utils import timezone


def now() -> datetime:
    """An aware moment in TIME_ZONE: a clock time in a question ("从 10:05 开始") is the asker's."""
    pinned = settings.DIAGNOSIS.get("DEMO_NOW")
    if not pinned:
        return timezone.localtime()
    moment = datetime.fromisoformat(pinned)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


def local_text(moment: datetime) -> str:
    """`YYYY-MM-DD HH:MM:SS` in TIME_ZONE: the timestamp shape of every tool output."""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")
