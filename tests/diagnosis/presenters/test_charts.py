"""A cited series is drawn as an SVG built from numbers and escaped text only."""

import re

from diagnosis.presenters.charts import ChartView
from diagnosis.presenters.evidence import widened
from diagnosis.selectors.charts import SeriesChart, Threshold


def test_the_svg_marks_the_cited_points_and_the_threshold_and_escapes_the_series_name():
    series = SeriesChart(
        name='queue_depth{shard="<b>7</b>"}',
        points=[(1_700_000_000.0, 3.0), (1_700_000_060.0, 41.0), (1_700_000_120.0, 12.0)],
        cited=[(1_700_000_060.0, 41.0)],
        threshold=Threshold(op=">=", value=40.0),
    )

    svg = widened(ChartView, series).svg

    assert svg.startswith('<svg class="series-chart"') and svg.endswith("</svg>")
    assert svg.count('class="chart-cited"') == 1
    assert "阈值 &gt;= 40" in svg
    assert "<b>" not in svg
    assert "&lt;b&gt;7&lt;/b&gt;" in svg
    assert "<script" not in svg


def test_a_series_of_any_magnitude_is_drawn_inside_the_frame():
    for values in ([1e308, -1e308], [1e308, 1e308], [5e-324, 0.0], [-1.7976931348623157e308, 1.0]):
        series = SeriesChart(
            name="x",
            points=[(1_700_000_000.0 + 60 * i, v) for i, v in enumerate(values)],
            cited=[],
            threshold=Threshold(op=">", value=-1e308),
        )

        svg = widened(ChartView, series).svg

        points = re.search(r'<polyline points="([^"]+)"', svg)[1]
        heights = [float(point.split(",")[1]) for point in points.split()]
        assert all(10 <= height <= 98 for height in heights), (values, points)
