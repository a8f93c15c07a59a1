"""Sample values as every tool and the answer print them: any magnitude Prometheus allows, without an
exception (issue 24: `1e308` raised `decimal.InvalidOperation` and failed the session)."""

import pytest

from tools.numbers import number_text


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("1.6450887e+10", "16450887000"),
        ("92", "92"),
        ("0.123456789", "0.123457"),
        ("42s", "42s"),
        ("NaN", "NaN"),
        ("+Inf", "+Inf"),
        ("-Inf", "-Inf"),
    ],
)
def test_ordinary_values_read_as_before(raw, text):
    assert number_text(raw) == text


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("1e308", "1e+308"),
        ("1.7976931348623157e+308", "1.79769e+308"),
        ("-2.5e40", "-2.5e+40"),
        ("1e28", "1e+28"),
        ("5e-324", "5e-324"),
        ("1e-30", "1e-30"),
    ],
)
def test_extreme_magnitudes_are_written_in_six_significant_digits(raw, text):
    assert number_text(raw) == text


def test_the_largest_plain_whole_number_keeps_every_digit():
    assert number_text("123456789012345678901") == "123456789012345678901"
