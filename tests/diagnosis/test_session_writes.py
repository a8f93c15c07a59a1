"""A session's records are written in a few short commits, none open while a source or the model answers,
and the live view still learns the stage and the tool calls as they happen."""

import time

import httpx2
import pytest
from django.db import connection
from django.test import override_settings

from diagnosis.engines.rules import RulesEngine
from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from diagnosis.evaluation.measure import CommitCounter
from diagnosis.models import AgentStep, DiagnosisSession
from diagnosis.services import invocations
from diagnosis.services.sessions import session_start
from diagnosis.services.toolbox import RecordingToolbox
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db(transaction=True)

# The steps, the asks' two turns of calls (alerts, then what they name) and the executor's turns.
MAX_COMMITS = 8
WORLDS = {
    "demo": ("order-service 数据库连接池是否耗尽？", None),
    "shop": ("checkout 为什么一直重启？", "shop"),
}
# Every query of one session, the claim to the rule evaluation: a baseline, so work done twice shows
# (measured when each round stopped reading its tool calls back: 36 and 40 before).
MAX_QUERIES = {WORLDS["demo"][0]: 32, WORLDS["shop"][0]: 36}


@pytest.fixture(params=sorted(WORLDS))
def world_question(request, settings):
    """A cause question of the demo world, and of the second world served by the fixture source."""
    question, world = WORLDS[request.param]
    overrides = {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}
    if world:
        data = world_tools(world).source_data()
        overrides |= {
            "VOCABULARY_FILE": str(WORLDS_DIR / world / "vocabulary.json"),
            **fixture_sources(data, config=settings.DIAGNOSIS),
        }
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield question


def test_a_session_is_written_in_a_few_commits_with_every_step_and_call_kept(world_question):
    counter = CommitCounter()
    with counter.counting():
        session = session_start(query=world_question, run_inline=True)

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert counter.commits <= MAX_COMMITS
    agents = list(session.steps.values_list("agent", flat=True))
    assert agents == [stage.value for stage in AgentStep.Agent] * (agents.count("planner"))
    assert session.tool_invocations.count() >= 2


def test_a_session_costs_a_pinned_number_of_queries(world_question, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES[world_question]) as captured:
        session = session_start(query=world_question, run_inline=True)

    assert session.status == DiagnosisSession.Status.COMPLETED
    calls_read = [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].startswith("SELECT") and '"diagnosis_toolinvocation"' in query["sql"]
    ]
    # Only the rule evaluation after the session reads its calls; no round reads back what it called.
    assert len(calls_read) <= 2


def test_no_transaction_is_open_while_a_tool_asks_its_source(world_question, monkeypatch):
    open_during_calls = []
    real_get_tool = invocations.get_tool

    class Watched:
        def __init__(self, tool):
            self._tool = tool

        def __getattr__(self, name):
            return getattr(self._tool, name)

        def bounded_run(self, parsed, context):
            open_during_calls.append(connection.in_atomic_block)
            return self._tool.bounded_run(parsed, context)

    monkeypatch.setattr(invocations, "get_tool", lambda name: Watched(real_get_tool(name)))

    session_start(query=world_question, run_inline=True)

    assert open_during_calls and not any(open_during_calls)


def test_no_transaction_is_open_while_the_model_answers(fake_llm, monkeypatch):
    fake_llm()
    open_during_requests = []
    real_handle = httpx2.HTTPTransport.handle_request

    def handle_request(transport, request):
        open_during_requests.append(connection.in_atomic_block)
        return real_handle(transport, request)

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", handle_request)

    session = session_start(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警", engine="llm", run_inline=True
    )

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert open_during_requests and not any(open_during_requests)


def test_one_turn_of_calls_is_one_commit_and_every_call_has_its_id():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.RUNNING)
    toolbox = RecordingToolbox(session=session, round=1, max_calls=2)
    counter = CommitCounter()
    with counter.counting():
        results = toolbox.call_many(
            [
                ("query_alerts", {"service": "order-service"}),
                ("query_logs", {"query": "HikariCP"}),
                ("query_logs", {"query": "OutOfMemoryError"}),
            ]
        )

    assert counter.commits == 1
    recorded = list(session.tool_invocations.order_by("id").values_list("id", flat=True))
    assert [result.invocation_id for result in results] == [*recorded, None]
    assert results[2].evidence_status == "failed"
    session.refresh_from_db()
    assert session.current_stage == "executor"


def test_the_live_view_learns_the_stage_of_a_slow_model_call_from_the_heartbeat(settings, monkeypatch):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "HEARTBEAT_SECONDS": 0.05,
        "DEMO_NOW": "2026-11-29T15:00:00+08:00",
    }
    monkeypatch.setattr("diagnosis.services.session_liveness.PROGRESS_SECONDS", 0.05)
    seen = []
    real_verify = RulesEngine.verify

    def slow_verify(self, stage_input):
        time.sleep(0.4)
        seen.append(
            DiagnosisSession.objects.filter(status=DiagnosisSession.Status.RUNNING).values_list(
                "current_stage", "rounds"
            )[0]
        )
        return real_verify(self, stage_input)

    monkeypatch.setattr(RulesEngine, "verify", slow_verify)

    session = session_start(query="只确认 order-service 是否存在 HighMemoryUsage 告警", run_inline=True)

    assert seen == [("verifier", 1)]
    assert session.current_stage == "done"
