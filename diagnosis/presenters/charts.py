"""Small server-rendered SVG charts of range-query evidence, drawn from the series record a citation
carries (`diagnosis.selectors.charts`).

The timeline of an investigation's answer (`diagnosis.pipeline.investigation.timeline`) is drawn
here too: its moved series normalised on one time axis, each onset marked.

No script, no CDN: the SVG is built here from numbers and escaped text only, and styled by
presentation attributes (no inline style), so it is safe under the strict CSP and looks the same on
the chat page, the admin and the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from diagnosis.pipeline.investigation.timeline import Timeline
from diagnosis.selectors.charts import SeriesChart
from tools.clock import local_text
from tools.numbers import number_text

WIDTH, HEIGHT = 320, 120
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 10, 10, 22


@dataclass(frozen=True)
class ChartView(SeriesChart):
    @property
    def svg(self) -> SafeString:
        return chart_svg(self)


def chart_svg(chart: SeriesChart) -> SafeString:
    times = [t for t, _ in chart.points]
    values = [v for _, v in chart.points]
    if chart.threshold is not None:
        values.append(chart.threshold.value)
    # In exact fractions: `1e308 - -1e308` overflows a float to inf (inf / inf draws NaN), and
    # `1e308 + 1` is 1e308 again (a flat series would divide by zero).
    low, high = Fraction(min(values)), Fraction(max(values))
    if high == low:
        low, high = low - 1, high + 1
    t0, t1 = min(times), max(times)
    span = (t1 - t0) or 1.0
    inner_w, inner_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(t: float) -> float:
        return PAD_LEFT + (t - t0) / span * inner_w

    def y(v: float) -> float:
        return PAD_TOP + float((high - Fraction(v)) / (high - low)) * inner_h

    line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in chart.points)
    parts = [
        f'<svg class="series-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(chart.name)}">',
        f"<title>{escape(chart.name)}</title>",
        f'<rect x="{PAD_LEFT}" y="{PAD_TOP}" width="{inner_w}" height="{inner_h}" class="chart-frame" fill="none" stroke="#dde1e8"/>',
        f'<text x="{PAD_LEFT - 4}" y="{PAD_TOP + 8}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(number_text(repr(float(high))))}</text>',
        f'<text x="{PAD_LEFT - 4}" y="{PAD_TOP + inner_h}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(number_text(repr(float(low))))}</text>',
        f'<text x="{PAD_LEFT}" y="{HEIGHT - 6}" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(t0))}</text>',
        f'<text x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 6}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(t1))}</text>',
    ]
    if chart.threshold is not None:
        level = y(chart.threshold.value)
        label = f"阈值 {chart.threshold.op} {number_text(repr(chart.threshold.value))}"
        parts += [
            f'<line x1="{PAD_LEFT}" y1="{level:.1f}" x2="{WIDTH - PAD_RIGHT}" y2="{level:.1f}" class="chart-threshold" stroke="#b42318" stroke-dasharray="4 3"/>',
            f'<text x="{WIDTH - PAD_RIGHT - 2}" y="{level - 3:.1f}" text-anchor="end" class="chart-threshold-label" fill="#b42318" font-size="9">{escape(label)}</text>',
        ]
    parts.append(
        f'<polyline points="{line}" class="chart-line" fill="none" stroke="#2f5bd3" stroke-width="1.6"/>'
    )
    parts += [
        f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3.5" class="chart-cited" fill="#8a5a00" stroke="#fff" stroke-width="1"><title>{escape(_clock(t))} {escape(number_text(repr(v)))}</title></circle>'
        for t, v in chart.cited
    ]
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every interpolated text is escaped above


def _clock(timestamp: float) -> str:
    return local_text(datetime.fromtimestamp(timestamp).astimezone())[11:16]


# The timeline's tracks, in the conclusion's order (a what-changed answer names up to five).
TRACK_COLOURS = ("#2f5bd3", "#b42318", "#0e7a5f", "#8a5a00", "#6941c6")
TIMELINE_HEIGHT = 140


@dataclass(frozen=True)
class TimelineTrackView:
    number: int
    label: str
    colour: str
    kind: str


@dataclass(frozen=True)
class TimelineView:
    svg: SafeString
    tracks: list[TimelineTrackView]


def timeline_view(timeline: Timeline) -> TimelineView:
    tracks = [
        TimelineTrackView(
            number=index + 1,
            label=track.label,
            colour=TRACK_COLOURS[index % len(TRACK_COLOURS)],
            kind=track.kind,
        )
        for index, track in enumerate(timeline.tracks)
    ]
    return TimelineView(svg=timeline_svg(timeline), tracks=tracks)


def timeline_svg(timeline: Timeline) -> SafeString:
    """The tracks over one time axis (each normalised to its own lowest..highest), each onset a dashed
    line in its track's colour numbered as the legend numbers it."""
    height = TIMELINE_HEIGHT
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    # Two rows of onset labels above the frame, alternating, so close onsets do not overlap.
    top = PAD_TOP + 20
    inner_h = height - top - PAD_BOTTOM
    span = timeline.end - timeline.start

    def x(t: float) -> float:
        return PAD_LEFT + (t - timeline.start) / span * inner_w

    def y(v: float) -> float:
        return top + (1 - v) * inner_h

    label = "；".join(track.label for track in timeline.tracks)
    parts = [
        f'<svg class="series-chart timeline-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<rect x="{PAD_LEFT}" y="{top}" width="{inner_w}" height="{inner_h}" class="chart-frame" fill="none" stroke="#dde1e8"/>',
        f'<text x="{PAD_LEFT - 4}" y="{top + 8}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">最高</text>',
        f'<text x="{PAD_LEFT - 4}" y="{top + inner_h}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">最低</text>',
        f'<text x="{PAD_LEFT}" y="{height - 6}" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(timeline.start))}</text>',
        f'<text x="{WIDTH - PAD_RIGHT}" y="{height - 6}" text-anchor="end" class="chart-axis" fill="#667085" font-size="9">{escape(_clock(timeline.end))}</text>',
    ]
    for index, track in enumerate(timeline.tracks):
        colour = TRACK_COLOURS[index % len(TRACK_COLOURS)]
        number = index + 1
        onset = x(track.onset)
        line = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in track.points)
        parts += [
            f'<g class="timeline-track" data-kind="{escape(track.kind)}" data-number="{number}">',
            f"<title>{escape(track.label)}</title>",
            f'<polyline points="{line}" class="chart-line" fill="none" stroke="{colour}" stroke-width="1.6"/>',
            f'<line x1="{onset:.1f}" y1="{top}" x2="{onset:.1f}" y2="{top + inner_h}" class="timeline-onset" stroke="{colour}" stroke-dasharray="3 3"/>',
            f'<text x="{onset:.1f}" y="{PAD_TOP + 8 + 10 * (index % 2)}" text-anchor="middle" class="timeline-onset-label" fill="{colour}" font-size="9">{number}·{escape(_clock(track.onset))}</text>',
            "</g>",
        ]
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every interpolated text is escaped above
