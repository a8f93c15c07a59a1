"""Replaying a session: each recorded call asked again of today's sources at its receipt's time, said
`same`, `changed` with what differs, or `failed` with why; and nothing written anywhere."""

from datetime import timedelta
from typing import ClassVar

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from diagnosis.models import DiagnosisSession
from diagnosis.services.replay import (
    CHANGED,
    FAILED,
    MAX_DIFFERENCES,
    NO_RECEIPT,
    SAME,
    output_differences,
    session_replay,
)
from tests.factories import ToolInvocationFactory
from tests.prometheus_server import FakePrometheus
from tests.tools.support import BrokenLogs, pin_demo_now, record, use_source
from tools.clock import local_text
from tools.evidence.logs.source import LogSource
from tools.evidence.registry import SERIES

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pinned_clock(settings):
    pin_demo_now(settings)


class ShiftingLogs(LogSource):
    """A team's log store whose lines the test changes: `(minutes ago, message)` of service payments."""

    lines: ClassVar[list[tuple[int, str]]] = []

    def query_logs(self, *, query, service, topic, now):
        return [
            {
                "timestamp": local_text(now - timedelta(minutes=minutes)),
                "level": "ERROR",
                "service": "payments",
                "instance": "payments-0",
                "topic": topic or "",
                "message": message,
                "metrics": {},
            }
            for minutes, message in self.lines
        ]


@pytest.fixture
def shifting_logs(settings, monkeypatch):
    use_source(settings, ShiftingLogs, LogSource)
    monkeypatch.setattr(
        ShiftingLogs, "lines", [(2, "card capture failed: gateway timeout"), (9, "ledger sync retry 3")]
    )
    return ShiftingLogs


def statuses(session: DiagnosisSession) -> list[str]:
    return [replay.status for replay in session_replay(session=session)]


def test_an_unchanged_world_replays_every_call_the_same(either_world, session):
    record(session, "query_alerts")
    record(session, "query_logs", query="error")
    record(session, "lookup_knowledge", query="restart")
    # The second lookup dedups against the first, on replay as when it was recorded.
    record(session, "lookup_knowledge", query="restart")
    record(session, "get_current_datetime")

    replays = session_replay(session=session)

    assert [(replay.status, replay.differences) for replay in replays] == [(SAME, [])] * 5


def test_a_replay_asks_at_the_recorded_time_not_now(either_world, session, settings):
    recorded = record(session, "query_alerts")
    # Inside the world's own override (the `settings` fixture would outlive it and restore the world).
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-30T15:00:00+08:00"}):
        # Asked now, a day later, the alerts' durations have moved on.
        later = record(DiagnosisSession.objects.create(query="later"), "query_alerts")
        assert later.output != recorded.output

        assert statuses(session) == [SAME]


def test_lines_that_appeared_and_went_are_named(shifting_logs, session, monkeypatch):
    record(session, "query_logs", query="error", service="payments")
    monkeypatch.setattr(shifting_logs, "lines", [(9, "ledger sync retry 3"), (1, "card declined burst")])

    [replay] = session_replay(session=session)

    assert replay.status == CHANGED
    assert replay.differences == [
        "消失：[2026-11-29 14:58:00][ERROR][payments] card capture failed: gateway timeout",
        "新增：[2026-11-29 14:59:00][ERROR][payments] card declined burst",
    ]


def test_a_source_down_today_fails_with_its_error(shifting_logs, session, settings):
    record(session, "query_logs", query="error", service="payments")
    use_source(settings, BrokenLogs, LogSource)

    [replay] = session_replay(session=session)

    assert replay.status == FAILED
    assert replay.differences == ["ConnectionError: 日志服务连接超时"]


def test_a_call_recorded_before_receipts_fails_saying_so(session):
    ToolInvocationFactory(session=session, receipt={})

    [replay] = session_replay(session=session)

    assert (replay.status, replay.differences) == (FAILED, [NO_RECEIPT])


def test_a_replay_writes_nothing(shifting_logs, session, monkeypatch):
    record(session, "query_logs", query="error", service="payments")
    record(session, "query_alerts")
    monkeypatch.setattr(shifting_logs, "lines", [])

    with CaptureQueriesContext(connection) as queries:
        assert statuses(session) == [CHANGED, SAME]

    assert [query["sql"] for query in queries if not query["sql"].lstrip().upper().startswith("SELECT")] == []


def moved(series: list[dict], value: str) -> list[dict]:
    return [{**one, "value": [one["value"][0], value]} for one in series]


CHECKOUT_SERIES = [
    {
        "metric": {"__name__": "up", "job": "checkout", "instance": "checkout-0:8080"},
        "value": [1764399600, "1"],
    },
    {
        "metric": {"__name__": "up", "job": "checkout", "instance": "checkout-1:8080"},
        "value": [1764399600, "1"],
    },
]


def test_a_series_whose_value_moved_is_named_with_both_values(settings, session):
    with FakePrometheus(CHECKOUT_SERIES) as prometheus:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": prometheus.url}
        record(session, "query_promql", query='up{job="checkout"}')
        assert statuses(session) == [SAME]
        prometheus.series = [CHECKOUT_SERIES[0], *moved(CHECKOUT_SERIES[1:], "0")]

        [replay] = session_replay(session=session)

    assert replay.status == CHANGED
    assert replay.differences == [
        '变化：up{instance="checkout-1:8080",job="checkout"} 当前值 1（15:00:00） → '
        'up{instance="checkout-1:8080",job="checkout"} 当前值 0（15:00:00）'
    ]
    # The same request went out both times: same query, same time.
    first, second, third = (request["params"] for request in prometheus.requests)
    assert first == second == third


def test_a_source_moved_elsewhere_is_named_before_its_data(settings, session):
    with FakePrometheus(CHECKOUT_SERIES) as before, FakePrometheus(CHECKOUT_SERIES) as after:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": before.url}
        record(session, "query_promql", query='up{job="checkout"}')
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": after.url}

        [replay] = session_replay(session=session)

    assert replay.status == CHANGED
    source, request = replay.differences
    assert source == f"来源：prometheus {before.url} → prometheus {after.url}"
    assert (
        request.startswith(f"请求 1：GET {before.url}/api/v1/query?query=")
        and f"→ GET {after.url}" in request
    )


def test_a_point_inside_a_range_that_moved_is_located():
    points = [[1764399540, "1"], [1764399570, "2"], [1764399600, "5"]]
    metric = {"__name__": "queue_depth", "queue": "refunds"}
    recorded = {"success": True, "result_type": "matrix", "series": [{"metric": metric, "values": points}]}
    replayed = {
        **recorded,
        "series": [{"metric": metric, "values": [points[0], [1764399570, "4"], points[2]]}],
    }

    differences = output_differences(recorded=recorded, replayed=replayed, kind=SERIES)

    # Its latest, lowest and highest did not move, so its text did not: where it moved is said instead.
    assert differences == ['变化：queue_depth{queue="refunds"}（values[1][1]："2" → "4"）']


def test_many_differences_are_bounded_with_a_count(shifting_logs, session, monkeypatch):
    record(session, "query_logs", query="error", service="payments", limit=50)
    monkeypatch.setattr(
        shifting_logs, "lines", [(minute, f"refund batch {minute} stuck") for minute in range(20)]
    )

    [replay] = session_replay(session=session)

    # Two lines went, twenty came, and `total` and `message` changed: 24 differences.
    assert replay.status == CHANGED
    assert len(replay.differences) == MAX_DIFFERENCES + 1
    assert replay.differences[-1] == f"另有 {24 - MAX_DIFFERENCES} 处不同"
