"""How the Prometheus source asks for a range (contracts §11): at most 120 points, the last one now."""

from datetime import UTC, datetime

import pytest

from tools.sources.prometheus import MAX_POINTS, PrometheusSource

NOW = datetime(2026, 12, 1, 12, 0, 7, tzinfo=UTC)


class Recording(PrometheusSource):
    def __init__(self) -> None:
        super().__init__("http://prometheus.invalid")
        self.asked: list[tuple[str, dict]] = []

    def data(self, path, params=None):
        self.asked.append((path, params))
        return {"resultType": "matrix", "result": []}


@pytest.mark.parametrize("minutes", [1, 7, 60, 360, 1440])
def test_a_range_ends_on_a_point_at_now_with_at_most_120_points(minutes):
    source = Recording()

    source.query_promql(query="up", minutes=minutes, now=NOW)

    [(path, params)] = source.asked
    assert path == "/api/v1/query_range"
    assert params["end"] == NOW.timestamp()
    span = params["end"] - params["start"]
    assert span % params["step"] == 0  # points at start + k·step: the last is `end`
    assert span // params["step"] + 1 <= MAX_POINTS
    assert minutes * 60 - params["step"] < span <= minutes * 60
