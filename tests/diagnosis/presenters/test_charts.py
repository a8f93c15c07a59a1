"""A cited series, and an investigation's timeline, are drawn as SVG built from numbers and escaped
text only."""

import re

from django.template.loader import render_to_string

from diagnosis.pipeline.investigation.timeline import Timeline, Track
from diagnosis.presenters.charts import ChartView, timeline_view
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


def timeline_of_two(label: str) -> Timeline:
    start = 1_700_000_000.0
    return Timeline(
        start=start,
        end=start + 1200,
        tracks=[
            Track(label=label, kind="series", onset=start + 600, points=[(start, 0.0), (start + 600, 1.0), (start + 1200, 1.0)]),
            Track(label="checkout（告警触发）", kind="alert", onset=start + 660, points=[(start, 0.0), (start + 660, 0.0), (start + 660, 1.0), (start + 1200, 1.0)]),
        ],
    )  # fmt: skip


def test_the_timeline_draws_each_track_with_its_numbered_onset_and_escapes_every_label():
    view = timeline_view(timeline_of_two('billing-db（<script>x</script>，"升高"）'))

    svg = view.svg
    assert svg.startswith('<svg class="series-chart timeline-chart"') and svg.endswith("</svg>")
    assert svg.count("<polyline") == 2 and svg.count('class="timeline-onset"') == 2
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert [track.number for track in view.tracks] == [1, 2]
    assert len({track.colour for track in view.tracks}) == 2
    # Every point and onset inside the frame of a 320-wide picture.
    xs = [float(x) for x in re.findall(r'(?:x1|x)="([\d.]+)"', svg)]
    assert all(0 <= x <= 320 for x in xs)
    for points in re.findall(r'<polyline points="([^"]+)"', svg):
        assert all(30 <= float(point.split(",")[1]) <= 118 for point in points.split())


def test_the_timeline_legend_is_escaped_by_its_template():
    view = timeline_view(timeline_of_two("<b>ledger</b>"))

    html = render_to_string("diagnosis/_timeline_chart.html", {"timeline": view})

    assert "<b>ledger</b>" not in html and "&lt;b&gt;ledger&lt;/b&gt;" in html
    assert html.count("<li data-kind") == 2
