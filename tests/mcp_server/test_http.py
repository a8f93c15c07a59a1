"""`/mcp` over Streamable HTTP, driven by the SDK's own client against the site on a real port: the
DRF token as bearer, the API's permissions, every call a recorded session of the caller; a diagnosis
queued for the worker and waited on up to a deadline, and a user's calls capped in flight."""

import httpx2
import pytest
from django_q.models import Task
from mcp import MCPError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from diagnosis.models import DiagnosisSession, ToolInvocation
from tests.factories import DiagnosisSessionFactory, ReviewerFactory, ToolInvocationFactory, UserFactory
from tests.mcp_server.support import (
    ALERT_QUESTIONS,
    LOG_SEARCHES,
    over_http,
    structured,
    worker_runs_the_queue,
)

pytestmark = pytest.mark.django_db(transaction=True)


def call(url: str, token: str | None, name: str, arguments: dict):
    async def scenario(client):
        return await client.call_tool(name, arguments)

    return over_http(url, token, scenario)


def test_the_tools_are_listed_each_saying_what_is_verified(mcp_url, token):
    async def scenario(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = over_http(mcp_url, token, scenario)

    # No Prometheus configured: PromQL is not offered, as the pipeline's model is not offered it.
    assert set(tools) == {"diagnose", "verify_claims", "query_logs", "count_logs", "lookup_runbook", "session_trace"}
    assert "each citation (invocation id + raw_path + excerpt) was found in the recorded tool output" in (
        tools["diagnose"].description
    )
    assert tools["diagnose"].output_schema["properties"]["verdict"]
    for name in ("query_logs", "count_logs", "lookup_runbook"):
        assert "Raw evidence, not a verified answer" in tools[name].description
    # An evidence tool's arguments are the product tool's own model.
    assert set(tools["query_logs"].input_schema["properties"]) == {"query", "service", "topic", "limit"}


def test_diagnose_answers_with_the_verdict_and_checked_citations(
    either_world, mcp_url, engineer, token, live_server, worker
):
    question, alert_name = ALERT_QUESTIONS[either_world]

    answer = structured(call(mcp_url, token, "diagnose", {"question": question}))

    session = DiagnosisSession.objects.get(session_id=answer["session_id"])
    assert (session.owner, session.kind, session.query) == (engineer, DiagnosisSession.Kind.CHAT, question)
    assert (answer["status"], answer["verdict"], answer["output_type"]) == ("COMPLETED", "PASS", "NORMAL")
    assert answer["answer"] == session.answer
    assert answer["session_url"] == f"{live_server.url}/c/{session.session_id}"
    [conclusion] = answer["conclusions"]
    assert conclusion["line"].startswith("结论：") and alert_name in conclusion["line"]
    assert conclusion["line"] in session.answer
    citations = [citation for claim in answer["claims"] for citation in claim["citations"]]
    citations += conclusion["citations"]
    assert answer["claims"] and citations
    invocations = {invocation.pk: invocation for invocation in session.tool_invocations.all()}
    for citation in citations:
        invocation = invocations[citation["invocation_id"]]
        ref_texts = {ref["raw_path"]: ref["text"] for ref in invocation.evidence_refs}
        assert citation["excerpt"] in ref_texts[citation["raw_path"]]
        assert (citation["source"], citation["source_location"]) == (
            invocation.source,
            invocation.source_location,
        )
    assert {citation["source"] for citation in citations} == {"demo" if either_world == "demo" else "fixture"}
    assert answer["uses_demo_data"] is (either_world == "demo")


def test_diagnose_runs_its_session_on_the_worker_as_the_chat_api_does(mcp_url, token, worker):
    answer = structured(call(mcp_url, token, "diagnose", {"question": ALERT_QUESTIONS["demo"][0]}))

    session = DiagnosisSession.objects.get(session_id=answer["session_id"])
    [task] = Task.objects.filter(func="diagnosis.tasks.session_run_task")
    assert (task.args, task.success) == ((session.pk,), True)
    assert (answer["status"], answer["verdict"]) == ("COMPLETED", "PASS")


def test_past_its_wait_a_diagnosis_answers_with_its_link_and_state_and_goes_on(
    settings, mcp_url, token, live_server
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MCP_WAIT_SECONDS": 0.3}

    result = call(mcp_url, token, "diagnose", {"question": ALERT_QUESTIONS["demo"][0]})

    # Not an error: the session is recorded and queued, the answer says where its result will be.
    answer = structured(result)
    session_id = answer["session_id"]
    assert (answer["status"], answer["verdict"], answer["output_type"]) == ("PENDING", "", "")
    assert (answer["claims"], answer["conclusions"], answer["verified_evidence"]) == ([], [], [])
    assert answer["session_url"] == f"{live_server.url}/c/{session_id}"
    assert answer["answer"].startswith("诊断尚未结束（排队中）")
    assert answer["session_url"] in answer["answer"] and session_id in answer["answer"]
    assert worker_runs_the_queue() == 1
    trace = structured(call(mcp_url, token, "session_trace", {"session_id": session_id}))
    assert (trace["session"]["status"], trace["session"]["query"]) == (
        "COMPLETED",
        ALERT_QUESTIONS["demo"][0],
    )


def test_a_users_calls_beyond_the_in_flight_cap_are_refused_until_one_of_their_sessions_ends(
    settings, mcp_url, engineer, token
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MCP_MAX_IN_FLIGHT": 2, "MCP_WAIT_SECONDS": 0.2}
    question = {"question": ALERT_QUESTIONS["demo"][0]}
    other = Token.objects.create(user=UserFactory()).key

    in_flight = [call(mcp_url, token, "diagnose", question) for _ in range(2)]
    over_cap = [
        call(mcp_url, token, "diagnose", question),
        call(mcp_url, token, "query_logs", {"query": "内存"}),
    ]
    another_users = call(mcp_url, other, "diagnose", question)

    assert [structured(result)["status"] for result in in_flight] == ["PENDING", "PENDING"]
    for refused in over_cap:
        assert refused.is_error
        assert (
            refused.content[0].text
            == "你已有 2 个会话在排队或执行中（同时最多 2 个），请等其中一个结束后再试。"
        )
    assert structured(another_users)["status"] == "PENDING"
    assert DiagnosisSession.objects.filter(owner=engineer).count() == 2
    worker_runs_the_queue()
    assert structured(call(mcp_url, token, "query_logs", {"query": "内存"}))["success"]


def test_a_tool_call_is_a_recorded_session_of_the_caller_with_its_refs_and_provenance(
    either_world, mcp_url, engineer, token
):
    query, service = LOG_SEARCHES[either_world]

    result = structured(call(mcp_url, token, "query_logs", {"query": query, "service": service}))

    session = DiagnosisSession.objects.get(session_id=result["session_id"])
    assert (session.owner, session.kind, session.status) == (
        engineer,
        DiagnosisSession.Kind.TOOL,
        DiagnosisSession.Status.COMPLETED,
    )
    invocation = session.tool_invocations.get()
    assert result["invocation_id"] == invocation.pk
    assert (invocation.tool_name, invocation.input) == ("query_logs", {"query": query, "service": service})
    assert result["evidence_status"] == "supported"
    assert result["evidence_refs"] == invocation.evidence_refs
    assert all(service in ref["text"] for ref in result["evidence_refs"])
    assert (result["source"], result["source_location"]) == (invocation.source, invocation.source_location)


def test_lookup_runbook_is_recorded_as_the_knowledge_lookup_a_diagnosis_makes(mcp_url, token):
    result = structured(call(mcp_url, token, "lookup_runbook", {"query": "HighMemoryUsage"}))

    invocation = ToolInvocation.objects.get(pk=result["invocation_id"])
    assert invocation.tool_name == result["tool_name"] == "lookup_knowledge"
    assert result["output"]["evidence_blocks"][0]["source_document"].endswith(".md")


def test_a_source_that_fails_is_an_error_result_recorded_as_a_failed_call(settings, mcp_url, token):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"LOKI_URL": "http://127.0.0.1:9", "SOURCE_TIMEOUT": 2}

    result = call(mcp_url, token, "query_logs", {"query": "timeout"})

    assert result.is_error
    failed = result.structured_content
    assert (failed["success"], failed["evidence_status"], failed["source"]) == (False, "failed", "loki")
    invocation = ToolInvocation.objects.get(pk=failed["invocation_id"])
    assert not invocation.success and invocation.error == failed["error"]
    assert invocation.session.status == DiagnosisSession.Status.COMPLETED


def test_without_a_valid_token_nothing_is_answered_and_nothing_recorded(mcp_url, token):
    for bearer in (None, "not-a-token"):
        with pytest.raises(ExceptionGroup) as refused:
            call(mcp_url, bearer, "diagnose", {"question": ALERT_QUESTIONS["demo"][0]})
        assert refused.group_contains(MCPError, match="error response")

        response = httpx2.post(
            mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": f"Bearer {bearer}"} if bearer else {},
        )
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Bearer"

    assert not DiagnosisSession.objects.exists()


def test_no_stream_is_opened_and_no_session_ended_get_and_delete_answer_405_at_once(mcp_url, token):
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}

    answers = [httpx2.request(method, mcp_url, headers=headers, timeout=5) for method in ("GET", "DELETE")]

    assert [answer.status_code for answer in answers] == [405, 405]


def test_session_trace_shows_the_api_trace_to_whom_the_api_shows_it(mcp_url, engineer, token):
    session = DiagnosisSessionFactory(owner=engineer, status=DiagnosisSession.Status.COMPLETED)
    other_user = UserFactory()
    other = Token.objects.create(user=other_user).key
    reviewer = Token.objects.create(user=ReviewerFactory()).key
    api = {user: APIClient() for user in (engineer, other_user)}
    for user, client in api.items():
        client.force_authenticate(user)
    path = f"/api/sessions/{session.session_id}/trace"
    expected, not_found = api[engineer].get(path).json(), api[other_user].get(path).json()

    traces = {
        who: call(mcp_url, bearer, "session_trace", {"session_id": session.session_id})
        for who, bearer in (("owner", token), ("other", other), ("reviewer", reviewer))
    }

    assert structured(traces["owner"]) == expected
    assert structured(traces["reviewer"])["session"]["session_id"] == session.session_id
    assert traces["other"].is_error
    assert traces["other"].content[0].text == not_found["detail"]


def test_session_trace_comes_a_page_at_a_time_and_its_reads_share_the_users_rate_with_the_api(
    settings, mcp_url, engineer, token
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"TRACE_RATE": "3/min"}
    session = DiagnosisSessionFactory(owner=engineer, status=DiagnosisSession.Status.COMPLETED)
    ToolInvocationFactory.create_batch(12, session=session)
    api = APIClient()
    api.force_authenticate(engineer)

    pages = [
        call(mcp_url, token, "session_trace", {"session_id": session.session_id, "page": page})
        for page in (1, 2)
    ]
    by_api = api.get(f"/api/sessions/{session.session_id}/trace")
    refused = call(mcp_url, token, "session_trace", {"session_id": session.session_id})

    first, second = (structured(page) for page in pages)
    assert [len(first["tool_invocations"]), len(second["tool_invocations"])] == [10, 2]
    assert (first["tool_invocations_page"]["next_page"], second["tool_invocations_page"]["next_page"]) == (
        2,
        None,
    )
    assert by_api.status_code == 200
    assert refused.is_error
    assert refused.content[0].text.startswith("读取会话记录过于频繁（每分钟最多 3 次）")


def test_bad_arguments_are_refused_with_the_reason_and_nothing_is_recorded(mcp_url, token):
    empty = call(mcp_url, token, "query_logs", {"query": ""})
    unknown = call(mcp_url, token, "diagnose", {"question": "x", "engine": "llm"})
    blank = call(mcp_url, token, "diagnose", {"question": "   "})

    assert empty.is_error and empty.content[0].text.startswith("参数无效: query:")
    assert unknown.is_error and "engine" in unknown.content[0].text
    assert blank.is_error and blank.content[0].text == "问题不能为空"
    assert not DiagnosisSession.objects.exists()


def test_calls_share_the_users_session_rate_with_the_api(settings, mcp_url, token):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "1/min"}

    first = call(mcp_url, token, "query_logs", {"query": "内存"})
    second = call(mcp_url, token, "diagnose", {"question": ALERT_QUESTIONS["demo"][0]})

    assert not first.is_error
    assert second.is_error and second.content[0].text.startswith("发起诊断过于频繁（每分钟最多 1 次）")
    assert DiagnosisSession.objects.count() == 1


def _broken(**kwargs):
    raise RuntimeError("disk full")


def test_a_diagnosis_or_call_that_fails_is_an_error_result_with_the_users_message(
    monkeypatch, mcp_url, token, worker
):
    monkeypatch.setattr("diagnosis.services.session_runner.diagnose", _broken)
    monkeypatch.setattr("diagnosis.services.tool_calls.invocation_record", _broken)

    diagnosis = call(mcp_url, token, "diagnose", {"question": ALERT_QUESTIONS["demo"][0]})
    tool_call = call(mcp_url, token, "query_logs", {"query": "内存"})

    assert diagnosis.is_error and tool_call.is_error
    failed = {
        result["session_id"]: result
        for result in (diagnosis.structured_content, tool_call.structured_content)
    }
    sessions = DiagnosisSession.objects.filter(session_id__in=failed)
    assert {session.status for session in sessions} == {DiagnosisSession.Status.FAILED}
    for session in sessions:
        said = failed[session.session_id]
        assert (said.get("answer") or said.get("error")) == session.answer
        assert session.error_id in session.answer and "disk full" not in session.answer
    assert tool_call.structured_content["invocation_id"] is None
