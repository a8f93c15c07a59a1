"""The time window a question names becomes the query window, named in the answer."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from diagnosis.pipeline.windows import Window, window_in

SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")
# A Wednesday morning, asked in Shanghai.
NOW = datetime(2026, 3, 4, 10, 30, tzinfo=SHANGHAI)
DEFAULT_MINUTES = 60


def at(day: int, hour: int, minute: int = 0, *, month: int = 3) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=SHANGHAI)


def read(text: str, *, now: datetime = NOW) -> Window:
    return window_in(text, now=now, default_minutes=DEFAULT_MINUTES)


@pytest.mark.parametrize(
    ("question", "start", "label"),
    [
        ("payment-service 最近 15 分钟的 500 错误", at(4, 10, 15), "最近 15 分钟"),
        ("过去一小时 CPU 怎么样", at(4, 9, 30), "过去 1 小时"),
        ("过去 1 个小时", at(4, 9, 30), "过去 1 小时"),
        ("近 2 小时", at(4, 8, 30), "最近 2 小时"),
        ("过去两个钟头", at(4, 8, 30), "过去 2 小时"),
        ("最近十五分钟", at(4, 10, 15), "最近 15 分钟"),
        ("最近二十分钟", at(4, 10, 10), "最近 20 分钟"),
        ("最近 30 分", at(4, 10), "最近 30 分钟"),
        ("最近半小时", at(4, 10), "最近 30 分钟"),
        ("最近半个小时", at(4, 10), "最近 30 分钟"),
        ("近一个半小时", at(4, 9), "最近 90 分钟"),
        ("最近 24 小时", at(3, 10, 30), "最近 24 小时"),
        ("过去 3 天", at(1, 10, 30), "过去 3 天"),
        ("近 7 日", at(25, 10, 30, month=2), "最近 7 天"),
        ("最近一周", at(25, 10, 30, month=2), "最近 1 周"),
        ("过去两个星期", at(18, 10, 30, month=2), "过去 2 周"),
        ("最近一个月", at(2, 10, 30, month=2), "最近 30 天"),
        ("最近 2h 的错误率", at(4, 8, 30), "最近 2 小时"),
        ("5分钟内重启了几次", at(4, 10, 25), "最近 5 分钟"),
        ("三天来有没有告警", at(1, 10, 30), "最近 3 天"),
        ("刚才有没有报错", at(4, 10, 15), "最近 15 分钟"),
        ("刚刚", at(4, 10, 15), "最近 15 分钟"),
        ("上周反复告警了几次", at(25, 10, 30, month=2), "过去 7 天（上周）"),
        ("上星期", at(25, 10, 30, month=2), "过去 7 天（上周）"),
        ("上一周", at(25, 10, 30, month=2), "过去 7 天（上周）"),
        ("上个月", at(2, 10, 30, month=2), "过去 30 天（上个月）"),
        ("今天有哪些告警", at(4, 0), "今天 00:00 起"),
        ("今日", at(4, 0), "今天 00:00 起"),
        ("本周", at(2, 0), "本周（周一 00:00 起）"),
        ("这周", at(2, 0), "本周（周一 00:00 起）"),
        ("从 10:00 起的日志", at(4, 10), "今天 10:00 起"),
        ("10点以来", at(4, 10), "今天 10:00 起"),
        ("10:00 之后", at(4, 10), "今天 10:00 起"),
        ("十点以来", at(4, 10), "今天 10:00 起"),
        ("9 点半以后", at(4, 9, 30), "今天 09:30 起"),
        ("从昨天 10 点以来", at(3, 10), "昨天 10:00 起"),
        ("从昨天开始", at(3, 0), "昨天 00:00 起"),
        # A time still to come today is last night's.
        ("从 23:00 起", at(3, 23), "昨天 23:00 起"),
        ("下午 3 点以来", at(3, 15), "昨天 15:00 起"),
    ],
)
def test_chinese_windows_run_up_to_now(question, start, label):
    window = read(question)
    assert (window.start, window.end, window.label) == (start, NOW, label)
    assert window.asked and window.ends_now


@pytest.mark.parametrize(
    ("question", "start", "label"),
    [
        ("error rate over the last 15 minutes", at(4, 10, 15), "最近 15 分钟"),
        ("last 10 mins", at(4, 10, 20), "最近 10 分钟"),
        ("in the last 15m", at(4, 10, 15), "最近 15 分钟"),
        ("past 2 hours", at(4, 8, 30), "过去 2 小时"),
        ("last 3 hrs", at(4, 7, 30), "最近 3 小时"),
        ("last 2h", at(4, 8, 30), "最近 2 小时"),
        ("LAST 2H", at(4, 8, 30), "最近 2 小时"),
        ("last 1.5 hours", at(4, 9), "最近 90 分钟"),
        ("last two hours", at(4, 8, 30), "最近 2 小时"),
        ("past 3 days", at(1, 10, 30), "过去 3 天"),
        ("last 2d", at(2, 10, 30), "最近 2 天"),
        ("past 2 weeks", at(18, 10, 30, month=2), "过去 2 周"),
        ("last hour", at(4, 9, 30), "最近 1 小时"),
        ("was it firing in the past hour", at(4, 9, 30), "过去 1 小时"),
        ("last half hour", at(4, 10), "最近 30 分钟"),
        ("last day", at(3, 10, 30), "最近 1 天"),
        ("last week", at(25, 10, 30, month=2), "过去 7 天（上周）"),
        ("past week", at(25, 10, 30, month=2), "过去 7 天（上周）"),
        ("last month", at(2, 10, 30, month=2), "过去 30 天（上个月）"),
        ("today", at(4, 0), "今天 00:00 起"),
        ("this week", at(2, 0), "本周（周一 00:00 起）"),
        ("since 10:00", at(4, 10), "今天 10:00 起"),
        ("since 10am", at(4, 10), "今天 10:00 起"),
        ("since 9:15 a.m.", at(4, 9, 15), "今天 09:15 起"),
        ("since 10 pm", at(3, 22), "昨天 22:00 起"),
        ("since yesterday", at(3, 0), "昨天 00:00 起"),
    ],
)
def test_english_windows_run_up_to_now(question, start, label):
    window = read(question)
    assert (window.start, window.end, window.label) == (start, NOW, label)
    assert window.asked and window.ends_now


@pytest.mark.parametrize(
    ("question", "start", "end", "label"),
    [
        ("昨天 order-service 的错误日志", at(3, 0), at(4, 0), "昨天（00:00–24:00）"),
        ("昨日", at(3, 0), at(4, 0), "昨天（00:00–24:00）"),
        ("what fired yesterday", at(3, 0), at(4, 0), "昨天（00:00–24:00）"),
        ("前天", at(2, 0), at(3, 0), "前天（00:00–24:00）"),
        ("the day before yesterday", at(2, 0), at(3, 0), "前天（00:00–24:00）"),
    ],
)
def test_a_past_day_ends_at_its_midnight(question, start, end, label):
    window = read(question)
    assert (window.start, window.end, window.label) == (start, end, label)
    assert window.asked and not window.ends_now
    assert window.minutes == 24 * 60


@pytest.mark.parametrize(
    "question",
    [
        "500 错误是哪里来的",
        "p99 是多少",
        "HTTP 500",
        "exit code 137",
        "10.0.0.1:9100 挂了吗",
        "node_load1 当前值",
        "CPU 超过 80% 了吗",
        "ordering 3 items fails",
        "error rate 15m",
        "2h",
        "since 10 restarts",
        "p99 above 5 ms",
        "past 5 deployments",
        "接近 5 分钟的慢请求",
        "持续 5 分钟",
        "5 分钟前重启了",
        "最近有哪些告警",
        "最近 3 次重启",
        "日志分析",
        "上周期的配置",
        "最近 0 分钟",
        "25:00 之后",
        # Further back than any source or datetime goes.
        "最近 999999 个月",
        "",
    ],
)
def test_numbers_that_are_not_windows_leave_the_default(question):
    window = read(question)
    assert window == Window(
        start=at(4, 9, 30), end=NOW, label="最近 60 分钟", asked=False, span=None, now=NOW
    )
    assert window.minutes == DEFAULT_MINUTES


def test_the_default_window_is_the_given_minutes_before_now():
    window = window_in("payment-service 为什么慢", now=NOW, default_minutes=45)
    assert (window.start, window.end, window.label) == (at(4, 9, 45), NOW, "最近 45 分钟")
    assert not window.asked and window.ends_now and window.minutes == 45


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("payment-service 最近 15 分钟的 500 错误", "最近 15 分钟"),
        ("order-service 的日志，最近　１５　分钟", "最近　１５　分钟"),
        ("was it firing in the last 2 hours?", "in the last 2 hours"),
        ("从昨天 10 点以来", "从昨天 10 点以来"),
    ],
)
def test_the_span_is_where_the_window_phrase_is_in_the_question(question, phrase):
    window = read(question)
    assert window.span is not None
    assert question[window.span[0] : window.span[1]] == phrase


def test_full_width_digits_and_spaces_read_like_ascii():
    assert read("最近　１５　分钟").start == read("最近 15 分钟").start == at(4, 10, 15)
    assert read("从 １０：００ 起").label == "今天 10:00 起"


@pytest.mark.parametrize(
    ("question", "label"),
    [
        ("昨天和最近 1 小时", "昨天（00:00–24:00）"),
        ("最近 1 小时和昨天", "最近 1 小时"),
        ("last 2h, not yesterday", "最近 2 小时"),
        # The longer of two phrases starting together.
        ("昨天 10 点以来", "昨天 10:00 起"),
    ],
)
def test_the_first_window_in_the_question_wins(question, label):
    assert read(question).label == label


def test_right_after_midnight_yesterday_and_today_are_calendar_days():
    just_after = at(5, 0, 5)
    for question in ("昨天", "yesterday"):
        window = read(question, now=just_after)
        assert (window.start, window.end) == (at(4, 0), at(5, 0))
    today = read("today", now=just_after)
    assert (today.start, today.end, today.minutes) == (at(5, 0), just_after, 5)
    assert read("从 10:00 起", now=just_after).start == at(4, 10)


def test_today_at_midnight_is_still_one_minute():
    assert read("今天", now=at(5, 0)).minutes == 1


def test_this_week_on_a_monday_starts_that_morning():
    monday = at(2, 8)
    assert read("本周", now=monday).start == at(2, 0)


def test_a_window_is_in_the_timezone_of_now():
    # 07:00 on the 4th in Shanghai is 23:00 on the 3rd in UTC: the day is the one `now` is in.
    utc_now = at(4, 7).astimezone(UTC)
    window = read("昨天", now=utc_now)
    assert (window.start, window.end) == (datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC))
    assert read("昨天", now=at(4, 7)).start == at(3, 0)
    for question in ("最近 15 分钟", "昨天", "从 10:00 起", "since 10am", "本周"):
        assert read(question).start.tzinfo is SHANGHAI


def test_relative_windows_count_real_time_across_a_daylight_saving_change():
    # New York springs forward at 02:00 on 8 March 2026: 03:30 EDT is two real hours after 00:30 EST.
    after_change = datetime(2026, 3, 8, 3, 30, tzinfo=NEW_YORK)
    window = read("last 2 hours", now=after_change)
    assert window.start == datetime(2026, 3, 8, 0, 30, tzinfo=NEW_YORK)
    assert window.start.astimezone(UTC) == after_change.astimezone(UTC) - timedelta(hours=2)
    assert window.minutes == 120


def test_a_past_day_with_a_daylight_saving_change_is_23_hours():
    window = read("昨天", now=datetime(2026, 3, 9, 10, 0, tzinfo=NEW_YORK))
    assert (window.start, window.end) == (
        datetime(2026, 3, 8, tzinfo=NEW_YORK),
        datetime(2026, 3, 9, tzinfo=NEW_YORK),
    )
    assert window.minutes == 23 * 60


def test_a_naive_now_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        window_in("最近 15 分钟", now=datetime(2026, 3, 4, 10, 30), default_minutes=DEFAULT_MINUTES)
