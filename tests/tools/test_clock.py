from datetime import datetime
from zoneinfo import ZoneInfo

from django.utils import timezone

from tools import clock


def test_pinned_now_is_the_demo_now(settings):
    assert clock.now() == datetime(2026, 11, 29, 15, 0, tzinfo=ZoneInfo("Asia/Shanghai"))


def test_naive_pinned_now_is_read_in_the_project_time_zone(settings):
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "DEMO_NOW": "2026-11-29T15:00:00"}

    assert clock.local_text(clock.now()) == "2026-11-29 15:00:00"


def test_without_a_pin_now_is_the_real_clock(settings):
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "DEMO_NOW": None}

    before = timezone.now()
    assert before <= clock.now() <= timezone.now()
