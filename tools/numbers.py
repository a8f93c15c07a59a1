"""Sample numbers and series names as every tool and the answer print them. Django-free, so the
pipeline writes an answer's numbers exactly as the tools wrote its evidence."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation

SIGNIFICANT_DIGITS = 6
# Beyond this many places either side of the point a value is written in scientific notation:
# `1e308` (legal in Prometheus) in plain digits would be 309 of them, past decimal's precision too.
PLAIN_PLACES = 20


def number_text(raw: str) -> str:
    """A sample value in plain decimals (Prometheus writes alert values as `1.6450887e+10`): whole
    numbers exactly, others to six significant digits; extreme magnitudes as `1.79769e+308`. NaN
    and ±Inf stay as Prometheus writes them."""
    try:
        value = Decimal(str(raw))
    except InvalidOperation:
        return str(raw)
    if not value.is_finite():
        return str(raw)
    if value and abs(value.adjusted()) > PLAIN_PLACES:
        mantissa, exponent = f"{value:.{SIGNIFICANT_DIGITS - 1}e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{exponent}"
    if value == value.to_integral_value():
        return f"{value.quantize(Decimal(1)):f}"
    rounded = round(value, max(0, SIGNIFICANT_DIGITS - 1 - value.adjusted()))
    return f"{rounded.normalize():f}"


def places_text(value: Decimal, *, places: int) -> str:
    """A derived number (GB of a byte count, percent of a ratio) to `places` decimals (`1.50`);
    beyond the plain range as `number_text` writes it: `1e308` bytes in GB has no place for 0.01."""
    if not value.is_finite() or (value and abs(value.adjusted()) > PLAIN_PLACES):
        return number_text(str(value))
    return f"{value:.{places}f}"


def finite_number(raw: object) -> Decimal | None:
    """A sample value or threshold as a Decimal to compute with (how far past, a unit): None for text
    that is no number, NaN, ±Inf and magnitudes past a float64's, which Prometheus holds as ±Inf;
    magnitudes under a float64's smallest are 0, as Prometheus holds them. A product or quotient of
    two is then far inside decimal's exponent range, so the arithmetic never overflows."""
    try:
        value = Decimal(str(raw).strip())
    except InvalidOperation:
        return None
    if not value.is_finite() or math.isinf(float(value)):
        return None
    return value if float(value) else Decimal(0)


def series_name(metric: dict[str, str]) -> str:
    """A Prometheus series as PromQL writes it: `name{label="value",…}`, labels sorted."""
    labels = ",".join(f'{name}="{value}"' for name, value in sorted(metric.items()) if name != "__name__")
    name = metric.get("__name__", "")
    return f"{name}{{{labels}}}" if labels or not name else name
