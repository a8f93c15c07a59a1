"""An evidence tool called on its own is a `tool` session of the caller holding its one recorded call."""

import pytest
from django.core.exceptions import ValidationError

from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import MAX_QUERY_CHARS, SessionRateLimited, SessionsInFlight
from diagnosis.services.tool_calls import tool_call_run
from tests.factories import DiagnosisSessionFactory, UserFactory

pytestmark = pytest.mark.django_db

SEARCHES = {
    "demo": {"query": "内存", "service": "order-service"},
    "shop": {"query": "OOMKilled", "service": "checkout"},
}


def test_a_call_is_a_completed_tool_session_of_the_caller_with_its_recorded_invocation(either_world):
    owner = UserFactory()
    arguments = SEARCHES[either_world]

    session = tool_call_run(owner=owner, tool_name="query_logs", arguments=arguments)

    assert (session.owner, session.kind, session.status) == (
        owner,
        DiagnosisSession.Kind.TOOL,
        DiagnosisSession.Status.COMPLETED,
    )
    invocation = session.tool_invocations.get()
    assert (invocation.tool_name, invocation.input, invocation.success) == ("query_logs", arguments, True)
    assert invocation.evidence_status == "supported"
    assert all(arguments["service"] in ref["text"] for ref in invocation.evidence_refs)
    # The tool named as people call it, written once when the session is stored.
    assert session.answer == f"日志查询：{invocation.output['message']}"


@pytest.mark.parametrize(
    ("tool_name", "arguments", "reason"),
    [
        ("query_logs", {"query": ""}, "参数无效: query:"),
        ("query_logs", {"query": "x", "since": "1h"}, "参数无效: since:"),
        ("restart_service", {}, "未知工具: restart_service"),
        ("get_current_datetime", {}, "get_current_datetime 不是证据工具"),
    ],
)
def test_a_call_that_cannot_run_is_refused_and_nothing_is_recorded(tool_name, arguments, reason):
    with pytest.raises(ValidationError) as refused:
        tool_call_run(owner=UserFactory(), tool_name=tool_name, arguments=arguments)

    assert refused.value.message_dict["arguments"][0].startswith(reason)
    assert not DiagnosisSession.objects.exists()


def test_calls_count_against_the_owners_session_rate(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "2/min"}
    owner = UserFactory()
    for _ in range(2):
        tool_call_run(owner=owner, tool_name="query_logs", arguments={"query": "内存"})

    with pytest.raises(SessionRateLimited):
        tool_call_run(owner=owner, tool_name="lookup_knowledge", arguments={"query": "内存"})
    assert DiagnosisSession.objects.count() == 2


def test_a_call_capped_in_flight_is_refused_while_that_many_of_the_owners_sessions_are_unfinished():
    owner = UserFactory()
    DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.PENDING)
    finished = tool_call_run(
        owner=owner, tool_name="query_logs", arguments={"query": "内存"}, max_in_flight=2
    )
    DiagnosisSessionFactory(owner=owner, status=DiagnosisSession.Status.RUNNING)

    with pytest.raises(SessionsInFlight):
        tool_call_run(owner=owner, tool_name="query_logs", arguments={"query": "内存"}, max_in_flight=2)
    # The call that ran has ended: it holds no place.
    assert finished.status == DiagnosisSession.Status.COMPLETED
    assert DiagnosisSession.objects.filter(owner=owner).count() == 3


def test_a_call_whose_recording_fails_ends_failed_with_the_stable_message(monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("diagnosis.services.tool_calls.invocation_record", broken)

    session = tool_call_run(owner=UserFactory(), tool_name="query_logs", arguments={"query": "内存"})

    assert session.status == DiagnosisSession.Status.FAILED
    assert session.answer == f"工具调用执行失败（错误编号 {session.error_id}），请稍后重试或联系管理员。"
    assert session.error == "RuntimeError: disk full"
    assert not session.tool_invocations.exists()


def test_a_tool_session_is_read_by_its_link_not_listed_among_the_conversations(client):
    owner = UserFactory()
    conversation = DiagnosisSession.objects.create(owner=owner, query="只确认 HighMemoryUsage")
    session = tool_call_run(owner=owner, tool_name="query_logs", arguments={"query": "内存"})
    client.force_login(owner)

    page = client.get(f"/c/{session.session_id}")
    chat = client.get("/")

    assert page.status_code == 200
    assert session.tool_invocations.get().output["message"] in page.content.decode()
    assert 'class="stages"' not in page.content.decode()
    conversations = [listed.session_id for listed in chat.context["page"].conversations]
    assert conversations == [conversation.session_id]


HUGE = "x" * 1_500_000


@pytest.mark.parametrize(
    ("tool_name", "arguments", "reason"),
    [
        ("query_logs", {"query": "内存", "service": HUGE}, "参数无效: service:"),
        ("query_alerts", {"alert_name": HUGE}, "参数无效: alert_name:"),
        ("query_promql", {"query": f"up{{job=~'{HUGE}'}}"}, "参数无效: query:"),
    ],
)
def test_a_free_text_argument_longer_than_a_question_is_refused_and_nothing_is_stored(
    tool_name, arguments, reason
):
    with pytest.raises(ValidationError) as refused:
        tool_call_run(owner=UserFactory(), tool_name=tool_name, arguments=arguments)

    assert refused.value.message_dict["arguments"][0].startswith(reason)
    assert len(refused.value.message_dict["arguments"][0]) < 1000
    assert not DiagnosisSession.objects.exists()


def test_the_query_of_a_tool_session_is_no_longer_than_a_question():
    # Each argument within its bound; escaped as JSON, together they are more than a question.
    arguments = {"query": '"' * 500, "service": '"' * MAX_QUERY_CHARS}

    session = tool_call_run(owner=UserFactory(), tool_name="query_logs", arguments=arguments)

    assert len(session.query) == MAX_QUERY_CHARS
    assert session.query.startswith('query_logs {"query": "\\"')
    assert session.tool_invocations.get().input == arguments
