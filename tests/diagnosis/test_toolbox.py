"""The recording toolbox keeps what it recorded: the rounds read a session's calls from it, never back
from the database."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from diagnosis.models import ToolInvocation
from diagnosis.services.toolbox import CallsKept, RecordingToolbox
from tests.tools.support import pin_demo_now

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo_now(settings):
    pin_demo_now(settings)


def calls_read(captured: CaptureQueriesContext) -> list[str]:
    return [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].startswith("SELECT") and '"diagnosis_toolinvocation"' in query["sql"]
    ]


def test_the_calls_are_kept_as_recorded_with_the_results_they_returned(session):
    kept = CallsKept()
    first = RecordingToolbox(session=session, round=1, max_calls=4, kept=kept).call_many(
        [("query_alerts", {"service": "order-service"}), ("query_logs", {"query": "HikariCP"})]
    )
    second = RecordingToolbox(session=session, round=2, max_calls=4, kept=kept).call(
        "query_logs", {"query": "OutOfMemoryError", "service": "order-service"}
    )

    stored = list(ToolInvocation.objects.filter(session=session).order_by("id"))
    assert [call.pk for call in kept.invocations()] == [call.pk for call in stored]
    # What a round reads from memory is what reading the rows back would give it; only where the records
    # stand among the output's keys may differ (PostgreSQL's jsonb keeps its keys in an order of its own).
    assert [_read(call) for call in kept.invocations()] == [_read(call) for call in stored]
    assert kept.results_before(round=2) == first
    assert kept.results_before(round=3) == [*first, second]


def _read(invocation: ToolInvocation) -> dict:
    return invocation.tool_result().model_dump(exclude={"records_at"})


def test_a_knowledge_lookup_is_deduped_against_the_kept_calls_without_reading_them_back(session):
    kept = CallsKept()
    RecordingToolbox(session=session, round=1, max_calls=1, kept=kept).call(
        "lookup_knowledge", {"query": "HighMemoryUsage"}
    )

    with CaptureQueriesContext(connection) as captured:
        again = RecordingToolbox(session=session, round=2, max_calls=1, kept=kept).call(
            "lookup_knowledge", {"query": "HighMemoryUsage"}
        )

    assert again.evidence_status == "no_evidence"
    assert again.records and all(block.deduped for block in again.records)
    assert calls_read(captured) == []


def test_a_call_past_the_budget_by_the_alerts_tools_former_name_is_refused_under_its_name_now(session):
    toolbox = RecordingToolbox(session=session, round=1, max_calls=1)

    _run, refused = toolbox.call_many(
        [("query_logs", {"query": "HikariCP"}), ("query_metrics", {"service": "order-service"})]
    )

    assert (refused.tool_name, refused.invocation_id, refused.success) == (
        "query_alerts",
        None,
        False,
    )
