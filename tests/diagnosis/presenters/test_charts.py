"""A cited series is drawn as an SVG built from numbers and escaped text only."""

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
