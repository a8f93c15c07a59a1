"""An alert rule's `expr` read with the PromQL parser (the `threshold` ask), the firing
episodes of an `ALERTS_FOR_STATE` range (`history`), and what a query a caller writes selects and
how far back it reads."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import promql_parser
import pytest

from tools.promql import Comparison, comparison_of, read_back, unnamed_selector

ERROR_RATIO = (
    '(sum by (service) (rate(http_requests_total{code=~"5.."}[5m]))'
    " / sum by (service) (rate(http_requests_total[5m]))) > 0.023"
)
P99 = "histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m]))) > 2.01"
DISK = (
    'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"} / node_filesystem_size_bytes{fstype!~"tmpfs|overlay"}'
    " * 100 < 10 and on (instance, device, mountpoint) node_filesystem_readonly == 0"
)


@pytest.mark.parametrize(
    ("expr", "series", "operator", "threshold_text"),
    [
        (
            ERROR_RATIO,
            '(sum by (service) (rate(http_requests_total{code=~"5.."}[5m]))'
            " / sum by (service) (rate(http_requests_total[5m])))",
            ">",
            "0.023",
        ),
        (P99, "histogram_quantile(0.99, sum by (le) (rate(x_bucket[5m])))", ">", "2.01"),
        ("node_load1 > 4", "node_load1", ">", "4"),
        ("up == 0", "up", "==", "0"),
        ("vector(time() % 40) < 20", "vector(time() % 40)", "<", "20"),
        (
            'node_memory_MemTotal_bytes{service="billing"} > 0',
            'node_memory_MemTotal_bytes{service="billing"}',
            ">",
            "0",
        ),
        ("x != 3", "x", "!=", "3"),
        ("x <= 3", "x", "<=", "3"),
        ("x >= 1.6450887e+10", "x", ">=", "1.6450887e+10"),
        ("x > bool 0.5", "x", ">", "0.5"),
        ("x>bool(3)", "x", ">", "3"),
        ("x < -5", "x", "<", "-5"),
        ("x > (0.5)", "x", ">", "0.5"),
        ("(x > 1)", "x", ">", "1"),
        ("x > 1e9", "x", ">", "1e9"),
        ("x > 1.50", "x", ">", "1.50"),
        ("x > .5", "x", ">", ".5"),
        ("x > Inf", "x", ">", "Inf"),
        ("foo offset 5m > 3", "foo offset 5m", ">", "3"),
        ('x{code=~"5.."} * 100 > 5', 'x{code=~"5.."} * 100', ">", "5"),
        ("max_over_time(x[1h:5m]) > 3", "max_over_time(x[1h:5m])", ">", "3"),
        ("x >= 5 > 3", "x >= 5", ">", "3"),
        ('x{le="0.5"} > 0.5', 'x{le="0.5"}', ">", "0.5"),
        ('x{a="> 7"} > 7', 'x{a="> 7"}', ">", "7"),
        ("x > 4 # not > 5", "x", ">", "4"),
    ],
)
def test_the_comparison_is_the_series_the_operator_and_the_number_as_written(
    expr, series, operator, threshold_text
):
    comparison = comparison_of(expr)

    assert comparison == Comparison(
        series=series, operator=operator, threshold=Decimal(threshold_text), threshold_text=threshold_text
    )


@pytest.mark.parametrize(
    ("expr", "operator"),
    [
        ("0.5 < x", ">"),
        ("0.5 <= x", ">="),
        ("0.5 > x", "<"),
        ("(0.5) >= x", "<="),
        ("0 == x", "=="),
        ("1 != bool x", "!="),
    ],
)
def test_a_number_on_the_left_is_read_with_the_series_on_the_left(expr, operator):
    comparison = comparison_of(expr)

    assert comparison is not None
    assert (comparison.series, comparison.operator) == ("x", operator)
    assert comparison.threshold == Decimal(comparison.threshold_text)


@pytest.mark.parametrize(
    ("expr", "series", "threshold_text"),
    [
        ("a > 0.1 and on() b", "a", "0.1"),
        ("a > 0.1 unless b", "a", "0.1"),
        ("a > 1 or b < 2", "a", "1"),
        ("(a > 1 and b) or c", "a", "1"),
        (
            DISK,
            'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"} / node_filesystem_size_bytes{fstype!~"tmpfs|overlay"} * 100',
            "10",
        ),
    ],
)
def test_a_set_operator_gates_the_comparison_on_its_left(expr, series, threshold_text):
    comparison = comparison_of(expr)

    assert comparison is not None
    assert (comparison.series, comparison.threshold_text) == (series, threshold_text)


def test_a_hex_threshold_keeps_its_spelling_and_its_value():
    assert comparison_of("x > 0x10") == Comparison(
        series="x", operator=">", threshold=Decimal(16), threshold_text="0x10"
    )


def test_a_long_series_is_printed_on_one_line_and_escaped_as_promql():
    long = (
        "histogram_quantile(0.99, sum by (le, service) (rate(http_request_duration_seconds_bucket"
        '{job="api", handler!~"/health|/metrics", path=~"/v1/.*\\\\.json", note="say \\"hi\\""}[5m]))) > 2.01'
    )

    comparison = comparison_of(long)

    assert comparison is not None
    assert "\n" not in comparison.series
    # Parsed again, it is the same expression as the left side of the rule's comparison.
    assert promql_parser.parse(comparison.series).prettify() == promql_parser.parse(long).lhs.prettify()


@pytest.mark.parametrize(
    "expr",
    [
        'absent(up{job="x"})',
        "node_load1",
        "x * 2",
        "x > 2 * 1024",
        "x > y",
        "a and b > 3",
        "x > NaN",
        "1 > bool 2",
        "garbage(((",
        "",
        "   ",
        "x >",
        "> 3",
        'x{a="unterminated} > 3',
    ],
)
def test_no_comparison_with_a_number_is_none(expr):
    assert comparison_of(expr) is None


@pytest.mark.parametrize("expr", [ERROR_RATIO, P99, DISK])
def test_any_cut_of_a_real_expr_gives_a_comparison_or_none_never_an_error(expr):
    for end in range(len(expr) + 1):
        for start in (0, end // 2):
            assert isinstance(comparison_of(expr[start:end]), Comparison | None)


@pytest.mark.parametrize(
    ("query", "unnamed"),
    [
        ('count_over_time({__name__=~".+"}[10y])', '{__name__=~".+"}'),
        ('sum by (pod) ({namespace="prod"})', '{namespace="prod"}'),
        ('rate(http_requests_total[5m]) / on() {job="api"}', '{job="api"}'),
        ('{__name__!="up", job="api"}', '{__name__!="up",job="api"}'),
        ('{__name__="up" or job="api"}', '{__name__="up" or job="api"}'),
        ("up", None),
        ('{__name__="up", job="api"}', None),
        ('{__name__="up" or __name__="ALERTS"}', None),
        ('max_over_time(rate(http_requests_total{code=~"5.."}[5m])[1h:1m])', None),
        ("vector(1) + time()", None),
        # Unreadable: the server answers with its own parse error.
        ("rate(node_load1{service=", None),
    ],
)
def test_a_selector_without_a_metric_name_is_found(query, unnamed):
    assert unnamed_selector(query) == unnamed


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "window", "back"),
    [
        ("up", timedelta(0), timedelta(0)),
        ("up", timedelta(hours=2), timedelta(hours=2)),
        ("count_over_time(up[10y])", timedelta(0), timedelta(days=3650)),
        ("rate(up[5m] offset 14d)", timedelta(days=1), timedelta(days=15, minutes=5)),
        ("max_over_time(rate(up[5m])[1d:1m] offset 2d)", timedelta(0), timedelta(days=3, minutes=5)),
        ("up offset -1d", timedelta(0), timedelta(0)),
        ("up[5m] @ 1764590400", timedelta(0), timedelta(days=365, minutes=5)),
        ("max_over_time(up[1h] @ start())", timedelta(days=2), timedelta(days=2, hours=1)),
        ("up @ end()", timedelta(days=2), timedelta(0)),
        ("topk(3, max_over_time(up[2d])) or absent(up offset 3d)", timedelta(0), timedelta(days=3)),
        ("rate(node_load1{service=", timedelta(minutes=30), timedelta(minutes=30)),
    ],
)
def test_how_far_back_a_query_reads_counts_ranges_offsets_subqueries_and_at_times(query, window, back):
    assert read_back(query, window=window, now=NOW) == back
