"""Sample values as every tool and the answer print them: any magnitude Prometheus allows, without an
exception (issue 24: `1e308` raised `decimal.InvalidOperation` and failed the session)."""

from decimal import Decimal

import pytest

from tools.numbers import finite_number, number_text, places_text


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


# Every magnitude a sample or a threshold can be written with (issue 38: the value slot's unit of a
# `1e308` sample raised `decimal.InvalidOperation` and failed the session).
ANY_MAGNITUDE = ["1e308", "-1e308", "1e-300", "NaN", "+Inf", "-Inf", "1e400", "-1e400", "1e-400", "1e999999"]


@pytest.mark.parametrize("raw", ANY_MAGNITUDE)
def test_any_magnitude_is_written_without_an_exception(raw):
    assert number_text(raw)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("1234.5678", "1234.57"),
        ("0", "0.00"),
        ("1e299", "1e+299"),
        ("-1e310", "-1e+310"),
        ("1e-298", "1e-298"),
        ("Infinity", "Infinity"),
    ],
)
def test_a_derived_number_has_its_places_or_the_scientific_form_past_them(value, text):
    assert places_text(Decimal(value), places=2) == text


@pytest.mark.parametrize(
    ("raw", "number"),
    [
        ("92", Decimal(92)),
        (" 0.52 ", Decimal("0.52")),
        ("1e308", Decimal("1e308")),
        ("-1e308", Decimal("-1e308")),
        ("1e-300", Decimal("1e-300")),
        ("1e-400", Decimal(0)),
        ("1e400", None),
        ("-1e400", None),
        ("NaN", None),
        ("+Inf", None),
        ("-Inf", None),
        ("92%", None),
    ],
)
def test_a_number_to_compute_with_is_one_a_float64_sample_can_hold(raw, number):
    assert finite_number(raw) == number


def test_quotients_and_percentages_of_any_two_numbers_to_compute_with_are_written():
    numbers = [number for raw in ANY_MAGNITUDE if (number := finite_number(raw))]

    assert {"1E+308", "-1E+308", "1E-300"} <= {str(number) for number in numbers}
    for top in numbers:
        for bottom in numbers:
            assert number_text(str(top / bottom)) and places_text(top / bottom * 100, places=2)
