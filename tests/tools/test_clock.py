from datetime import datetime, timedelta
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


def test_without_a_pin_a_clock_time_in_a_question_is_read_in_the_project_time_zone(settings):
    from diagnosis.pipeline.windows import window_in

    settings.TIME_ZONE = "Asia/Shanghai"
    settings.DIAGNOSIS = {**settings.DIAGNOSIS, "DEMO_NOW": None}
    now = clock.now()
    at_five_past_ten = now.replace(hour=10, minute=5, second=0, microsecond=0)
    if at_five_past_ten > now:
        at_five_past_ten -= timedelta(days=1)

    window = window_in("从 10:05 开始出现异常", now=now, default_minutes=30)

    assert now.utcoffset() == timedelta(hours=8)
    assert window.start == at_five_past_ten
    assert clock.local_text(window.start).endswith("10:05:00")
