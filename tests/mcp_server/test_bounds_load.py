"""`bench_bounds`' measure, in this process: a real Prometheus HTTP answer of every series of a metric
(scaled to 2 MB), MCP `query_promql` through the recording path, the session read back through both
traces."""

import time

import pytest

from mcp_server.management.bounds_load import bounds_measure, prometheus_answer, prometheus_serving

pytestmark = pytest.mark.django_db


def test_an_answer_of_every_series_is_stored_returned_and_read_back_within_the_bounds(settings):
    answer, series = prometheus_answer(megabytes=2, at=time.time())
    limit = settings.DIAGNOSIS["OUTPUT_MAX_BYTES"]

    with prometheus_serving(answer) as url:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": url}
        measure = bounds_measure(calls=1)

    assert series > 10_000
    assert measure.truncated
    # The output and its evidence refs (one short text per kept series) together within the bound.
    assert measure.stored_bytes <= limit < len(answer)
    assert measure.api_trace_bytes <= limit
    assert measure.mcp_trace_bytes <= limit
