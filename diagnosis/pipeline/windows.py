"""The time window a question names: "最近 15 分钟", "过去一小时", "昨天", "上周",
"since 10:00", "last 2h".

`window_in` reads the first window phrase of a question, Chinese or English, into the query window
and the label the answer names it by. A question without one gets the default window, marked as not
asked, so the answer can say which window it used either way and never passes a default off as the
asked window.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from fractions import Fraction

MINUTE = 1
HOUR = 60
DAY = 24 * HOUR
WEEK = 7 * DAY
# A month is read as 30 days: the contract's window for "上个月" / "最近一个月"; calendar months
# would make "最近一个月" depend on the date it is asked.
MONTH = 30 * DAY
# Nothing holds data from before a century ago, and a datetime cannot reach much further back (year
# 1): a longer "window" is not one the sources could answer, so the question reads as naming none.
LONGEST = 100 * 365 * DAY
JUST_NOW = 15 * MINUTE

# Full-width ASCII and the ideographic space to their ASCII forms, one character for one so that a
# span found in the folded text is the same span in the question.
FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}

CHINESE_DIGITS = {char: value for value, char in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
ENGLISH_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty-five": 45,
    "sixty": 60, "ninety": 90,
}  # fmt: skip
CHINESE_NUMBER = r"[一二两三四五六七八九十百][零〇一二两三四五六七八九十百]{0,4}"
# A number is read whole ("1.5"), never as the tail or head of a longer one ("1500", "10.0.0.1").
NUMBER = (
    r"(?<![0-9.])[0-9]{1,6}(?:\.[0-9]{1,3})?(?![0-9])|"
    + CHINESE_NUMBER
    + "|"
    + "|".join(rf"\b{word}\b" for word in ENGLISH_NUMBERS)
)
# `分`, `日` and `周` also start words an ops question uses (分析 analysis, 分布, 分区, 日志 logs,
# 周期 period); English units stand alone, so `5 ms` and `5 deployments` are not windows.
UNIT = (
    r"(?P<unit>分钟|分(?![析布区配片组类])|小时|钟头|天|日(?!志)|周(?!期)|星期|礼拜|个月|"
    r"minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wks?|w|months?)(?![a-z])"
)
UNITS = {
    "分钟": MINUTE, "分": MINUTE, "minute": MINUTE, "min": MINUTE, "m": MINUTE,
    "小时": HOUR, "钟头": HOUR, "hour": HOUR, "hr": HOUR, "h": HOUR,
    "天": DAY, "日": DAY, "day": DAY, "d": DAY,
    "周": WEEK, "星期": WEEK, "礼拜": WEEK, "week": WEEK, "wk": WEEK, "w": WEEK,
    "个月": MONTH, "month": MONTH,
}  # fmt: skip
# How the answer names an amount: in the largest of these that divides it, never larger than the unit
# asked in ("最近 24 小时" stays in hours) and months in days, which is what was queried.
LABEL_UNITS = (("周", WEEK), ("天", DAY), ("小时", HOUR), ("分钟", MINUTE))

PATTERN_FLAGS = re.IGNORECASE
CHINESE_RELATIVE = re.compile(
    r"(?P<word>最近|过去|(?<![接将])近)\s*(?:的|这个|这)?\s*"
    rf"(?:(?P<num>{NUMBER})\s*个?\s*)?(?P<half>半\s*个?)?\s*{UNIT}(?:\s*(?:以内|之内|内|以来|来))?",
    PATTERN_FLAGS,
)
# "5 分钟内", "三天来": an amount closing on 内 / 以来 is a window even without 最近.
CHINESE_WITHIN = re.compile(
    rf"(?<![0-9.a-z_一二两三四五六七八九十百])(?:(?P<num>{NUMBER})\s*个?\s*)?(?P<half>半\s*个?)?\s*{UNIT}"
    r"\s*(?:以内|之内|内|以来|来)",
    PATTERN_FLAGS,
)
ENGLISH_LEAD = r"(?:\b(?:in|over|during|within|for)\s+the\s+)?\b(?P<word>last|past)\s+"
ENGLISH_RELATIVE = re.compile(rf"{ENGLISH_LEAD}(?P<num>{NUMBER})\s*{UNIT}", PATTERN_FLAGS)
ENGLISH_ONE = re.compile(
    rf"{ENGLISH_LEAD}(?P<what>hour|day|week|month|half\s+(?:an\s+)?hour)\b", PATTERN_FLAGS
)
JUST_NOW_WORDS = re.compile(r"刚才|刚刚", PATTERN_FLAGS)
TODAY = re.compile(r"今天|今日|\btoday\b", PATTERN_FLAGS)
YESTERDAY = re.compile(r"昨天|昨日|\byesterday\b", PATTERN_FLAGS)
DAY_BEFORE_YESTERDAY = re.compile(r"(?<!目)前天|\bthe\s+day\s+before\s+yesterday\b", PATTERN_FLAGS)
SINCE_YESTERDAY = re.compile(
    r"(?:(?:从|自从|自)\s*)?(?:昨天|昨日)\s*(?:以来|起|开始|至今|到现在)|\bsince\s+yesterday\b", PATTERN_FLAGS
)
LAST_WEEK = re.compile(r"上(?:一个|一|个)?(?:周(?!期)|星期|礼拜)", PATTERN_FLAGS)
THIS_WEEK = re.compile(r"本周|这周|本星期|这个?星期|这个?礼拜|\bthis\s+week\b", PATTERN_FLAGS)
LAST_MONTH = re.compile(r"上(?:一个|一|个)?月", PATTERN_FLAGS)
SINCE_SUFFIX = r"(?:起|开始|以来|之后|以后|后|至今|到现在|到目前)"
CHINESE_SINCE_CLOCK = re.compile(
    r"(?:(?:从|自从|自)\s*)?(?:(?P<day>今天|今日|昨天|昨日)\s*)?(?:(?P<meridiem>上午|早上|早晨|凌晨|下午|晚上)\s*)?"
    r"(?<![0-9.:])(?P<hour>[0-9]{1,2}|[零一二两三四五六七八九十]{1,3})\s*(?::|点钟?)\s*"
    rf"(?:(?P<minute>[0-9]{{1,2}})(?![0-9])\s*分?|(?P<half>半))?\s*{SINCE_SUFFIX}",
    PATTERN_FLAGS,
)
# "since 10" may be ten of anything: only a clock time (10:00, 10am) follows since.
ENGLISH_SINCE_CLOCK = re.compile(
    r"\bsince\s+(?=[0-9]{1,2}\s*(?::\s*[0-9]{2}|[ap]\.?m\b))(?P<hour>[0-9]{1,2})(?![0-9])"
    r"(?:\s*:\s*(?P<minute>[0-9]{2})(?![0-9]))?(?:\s*(?P<meridiem>[ap]\.?m\b\.?))?",
    PATTERN_FLAGS,
)
AFTERNOON = ("下午", "晚上")
DAY_NAMES = {0: "今天", 1: "昨天"}

Span = tuple[int, int]
# What a window phrase reads as: (start, end, label).
Reading = tuple[datetime, datetime, str]
# Reads one match of its rule's pattern; None when the phrase turns out not to be a window the
# sources could be asked for (25:00, "最近 0 分钟"), so the next match or rule is tried.
Reader = Callable[[re.Match[str], datetime], Reading | None]


@dataclass(frozen=True, kw_only=True)
class Window:
    """The query window of a question, and how the answer names it."""

    start: datetime  # aware, in `now`'s timezone
    end: datetime  # `now`, except for a past day ("昨天", "yesterday"), which ends at its midnight
    label: str  # "最近 15 分钟", "过去 1 小时", "昨天（00:00–24:00）", "过去 7 天（上周）", "今天 10:00 起"
    asked: bool  # False for the default window: the question names none
    span: Span | None  # where the window phrase is in the question; None for the default
    now: datetime  # when the question was read: `ends_now` is told by it, not by the label

    @property
    def minutes(self) -> int:
        """Whole minutes from start to end, at least 1 (a source's step and range need one)."""
        return max(1, int(_elapsed(self.start, self.end) // timedelta(minutes=1)))

    @property
    def ends_now(self) -> bool:
        return self.end == self.now


def window_in(text: str, *, now: datetime, default_minutes: int) -> Window:
    """The first time window `text` names, or the last `default_minutes` up to `now` (not asked)."""
    if now.utcoffset() is None:
        raise ValueError("now must be timezone-aware: a window is read in the asker's local day")
    folded = (text or "").translate(FULL_WIDTH)
    found = [hit for pattern, read in RULES if (hit := _first_reading(pattern, read, folded, now=now))]
    if not found:
        start = _before(now, minutes=Fraction(default_minutes))
        label = f"最近 {default_minutes} 分钟"
        return Window(start=start, end=now, label=label, asked=False, span=None, now=now)
    # The first phrase in the question wins; of two starting together, the longer says more
    # ("昨天 10 点以来" over "昨天").
    span, (start, end, label) = min(found, key=lambda hit: (hit[0][0], -hit[0][1]))
    return Window(start=start, end=end, label=label, asked=True, span=span, now=now)


def _first_reading(
    pattern: re.Pattern[str], read: Reader, text: str, *, now: datetime
) -> tuple[Span, Reading] | None:
    for match in pattern.finditer(text):
        reading = read(match, now)
        if reading:
            return match.span(), reading
    return None


# --- relative windows: an amount of a unit back from now ---------------------------------------


def _read_relative(match: re.Match[str], now: datetime) -> Reading | None:
    groups = match.groupdict()
    amount = _amount(groups["num"], half=bool(groups.get("half")))
    if amount is None:
        return None
    unit = _unit(groups["unit"])
    # "5 分钟内" has no word of its own; it reads as 最近.
    word = _word(groups.get("word") or "最近")
    return _relative(now, minutes=amount * unit, largest=DAY if unit == MONTH else unit, word=word)


def _read_one(match: re.Match[str], now: datetime) -> Reading | None:
    """No number: "last hour", "past day", "last half hour"; "last week" / "last month" as 上周 / 上个月."""
    what = " ".join(match["what"].lower().split())
    if what == "week":
        return _read_last_week(match, now)
    if what == "month":
        return _read_last_month(match, now)
    minutes = {"hour": Fraction(HOUR), "day": Fraction(DAY)}.get(what, Fraction(HOUR, 2))
    return _relative(now, minutes=minutes, largest=int(minutes), word=_word(match["word"]))


def _read_just_now(match: re.Match[str], now: datetime) -> Reading | None:
    return _relative(now, minutes=Fraction(JUST_NOW), largest=MINUTE, word="最近")


def _read_last_week(match: re.Match[str], now: datetime) -> Reading | None:
    # 上周 is read as the 7 days before now, not the calendar week before this one: asked on a
    # Monday the calendar week would leave out everything since.
    return _before(now, minutes=Fraction(WEEK)), now, "过去 7 天（上周）"


def _read_last_month(match: re.Match[str], now: datetime) -> Reading | None:
    return _before(now, minutes=Fraction(MONTH)), now, "过去 30 天（上个月）"


def _relative(now: datetime, *, minutes: Fraction, largest: int, word: str) -> Reading | None:
    if not 1 <= minutes <= LONGEST:
        return None
    return _before(now, minutes=minutes), now, f"{word} {_amount_label(minutes, largest=largest)}"


def _amount(number: str | None, *, half: bool) -> Fraction | None:
    """The amount written: "15" → 15, "一" + 半 → 3/2, 半 alone → 1/2; None when neither was written."""
    if number is None:
        return Fraction(1, 2) if half else None
    return _number(number) + (Fraction(1, 2) if half else 0)


def _number(text: str) -> Fraction:
    if text[0].isascii() and text[0].isdigit():
        return Fraction(text)
    if text.lower() in ENGLISH_NUMBERS:
        return Fraction(ENGLISH_NUMBERS[text.lower()])
    return Fraction(_chinese_number(text))


def _chinese_number(text: str) -> int:
    """Chinese numerals up to the hundreds: "十五" → 15, "二十" → 20, "一百二十" → 120, "两" → 2."""
    total, digit = 0, 0
    for char in text:
        if char == "十":
            total, digit = total + (digit or 1) * 10, 0
        elif char == "百":
            total, digit = total + (digit or 1) * 100, 0
        else:
            digit = CHINESE_DIGITS[char]
    return total + digit


def _unit(text: str) -> int:
    token = text.lower()
    return UNITS.get(token) or UNITS[token.removesuffix("s")]


def _word(text: str) -> str:
    """The answer echoes the question's word: 过去 / past → "过去", 最近 / 近 / last → "最近"."""
    return "过去" if text.lower() in ("过去", "past") else "最近"


def _amount_label(minutes: Fraction, *, largest: int) -> str:
    for name, size in LABEL_UNITS:
        if size <= largest and (minutes / size).denominator == 1:
            return f"{minutes // size} {name}"
    return f"{float(minutes):g} 分钟"


# --- calendar windows: days, weeks and clock times in `now`'s timezone --------------------------


def _read_today(match: re.Match[str], now: datetime) -> Reading | None:
    return _midnight(now.date(), now=now), now, "今天 00:00 起"


def _read_yesterday(match: re.Match[str], now: datetime) -> Reading | None:
    return _past_day(now, days_back=1, name="昨天")


def _read_day_before_yesterday(match: re.Match[str], now: datetime) -> Reading | None:
    return _past_day(now, days_back=2, name="前天")


def _read_since_yesterday(match: re.Match[str], now: datetime) -> Reading | None:
    return _midnight(now.date() - timedelta(days=1), now=now), now, "昨天 00:00 起"


def _read_this_week(match: re.Match[str], now: datetime) -> Reading | None:
    monday = now.date() - timedelta(days=now.weekday())
    return _midnight(monday, now=now), now, "本周（周一 00:00 起）"


def _read_since_clock(match: re.Match[str], now: datetime) -> Reading | None:
    """A clock time ("从 10:00 起", "下午 3 点以来", "since 10am"): since that time today, or the day
    before when it is still to come (asked at 01:00, "从 23:00 起" means last night)."""
    groups = match.groupdict()
    hour = _clock_hour(match["hour"], meridiem=groups.get("meridiem"))
    minute = 30 if groups.get("half") else int(groups.get("minute") or 0)
    if hour is None or minute > 59:
        return None
    days_back = 1 if (groups.get("day") or "").startswith("昨") else 0
    start = _clock_on(now, days_back=days_back, hour=hour, minute=minute)
    if start > now:
        days_back += 1
        start = _clock_on(now, days_back=days_back, hour=hour, minute=minute)
    return start, now, f"{DAY_NAMES[days_back]} {hour:02d}:{minute:02d} 起"


def _clock_on(now: datetime, *, days_back: int, hour: int, minute: int) -> datetime:
    return datetime.combine(now.date() - timedelta(days=days_back), time(hour, minute), tzinfo=now.tzinfo)


def _clock_hour(text: str, *, meridiem: str | None) -> int | None:
    hour = int(text) if text.isdigit() else _chinese_number(text)
    marker = (meridiem or "").lower()
    if marker in AFTERNOON or marker.startswith("p"):
        hour += 12 if hour < 12 else 0
    elif marker.startswith("a") and hour == 12:
        hour = 0
    return hour if hour < 24 else None


def _past_day(now: datetime, *, days_back: int, name: str) -> Reading:
    day = now.date() - timedelta(days=days_back)
    return _midnight(day, now=now), _midnight(day + timedelta(days=1), now=now), f"{name}（00:00–24:00）"


def _midnight(day: date, *, now: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=now.tzinfo)


def _before(now: datetime, *, minutes: Fraction) -> datetime:
    # Back from now in real time: across a daylight-saving change, "last 2h" is two hours of data,
    # not two hours of wall clock (aware arithmetic in one zone is wall-clock arithmetic).
    back = timedelta(seconds=float(minutes * 60))
    return (now.astimezone(UTC) - back).astimezone(now.tzinfo)


def _elapsed(start: datetime, end: datetime) -> timedelta:
    return end.astimezone(UTC) - start.astimezone(UTC)


RULES: tuple[tuple[re.Pattern[str], Reader], ...] = (
    (CHINESE_RELATIVE, _read_relative),
    (CHINESE_WITHIN, _read_relative),
    (ENGLISH_RELATIVE, _read_relative),
    (ENGLISH_ONE, _read_one),
    (JUST_NOW_WORDS, _read_just_now),
    (TODAY, _read_today),
    (YESTERDAY, _read_yesterday),
    (DAY_BEFORE_YESTERDAY, _read_day_before_yesterday),
    (SINCE_YESTERDAY, _read_since_yesterday),
    (LAST_WEEK, _read_last_week),
    (THIS_WEEK, _read_this_week),
    (LAST_MONTH, _read_last_month),
    (CHINESE_SINCE_CLOCK, _read_since_clock),
    (ENGLISH_SINCE_CLOCK, _read_since_clock),
)
