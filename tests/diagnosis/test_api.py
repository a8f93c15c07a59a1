from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession, ToolInvocation
from diagnosis.selectors.sessions import ROW_QUERY_CHARS
from diagnosis.services.session_lifecycle import session_execute
from diagnosis.services.sessions import SESSION_ID_TAKEN
from feedback.models import BadCase
from tests.concurrency import run_concurrently
from tests.factories import (
    CompletedSessionFactory,
    DiagnosisSessionFactory,
    ReviewerFactory,
    StaffUserFactory,
    ToolInvocationFactory,
    UserFactory,
)
from tools.bounds import stored_bytes

pytestmark = pytest.mark.django_db

TRACE_SESSION_KEYS = {
    "session_id",
    "query",
    "status",
    "output_type",
    "answer",
    "engine",
    "rounds",
    "feedback",
    "error",
    "created_at",
    "finished_at",
}
TRACE_KEYS = {
    "session",
    "hasFeedback",
    "hasVerifierEvaluation",
    "hasAiOpsRuleEvaluation",
    "self_evaluation",
    "steps",
    "tool_invocations",
    "tool_invocations_page",
}
INVOCATION_KEYS = {
    "id",
    "round",
    "tool_name",
    "input",
    "success",
    "evidence_status",
    "retrieval_details",
    "latency_ms",
    "receipt",
}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def trace_path(session_id: str) -> str:
    return reverse("api-session-trace", kwargs={"session_id": session_id})


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/chat", {"message": "order-service 内存"}),
        ("get", "/api/sessions", None),
        ("get", "/api/sessions/any-session/trace", None),
        ("post", "/api/feedback", {"sessionId": "any-session", "feedback": "useful"}),
        ("get", "/api/schema", None),
    ],
)
def test_unauthenticated_requests_are_refused_with_401_saying_how_to_authenticate(method, path, body):
    response = getattr(APIClient(), method)(path, body, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert not DiagnosisSession.objects.exists()


def test_chat_starts_a_pending_session_and_answers_202_with_its_trace_url():
    user = UserFactory()
    response = client_for(user).post(
        "/api/chat", {"message": "只确认 order-service 是否存在 HighMemoryUsage 告警"}
    )
    assert response.status_code == 202
    assert set(response.data) == {"sessionId", "status", "traceUrl"}
    session = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert session.owner == user
    assert response.data["status"] == DiagnosisSession.Status.PENDING
    assert response.data["traceUrl"] == f"/api/sessions/{session.session_id}/trace"


def test_chat_accepts_a_client_session_id_once():
    client = client_for(UserFactory())
    first = client.post("/api/chat", {"message": "order-service 内存", "session_id": "incident-42"})
    second = client.post("/api/chat", {"message": "order-service 内存", "session_id": "incident-42"})
    assert first.status_code == 202
    assert first.data["sessionId"] == "incident-42"
    assert second.status_code == 400
    assert "session_id" in second.data


def test_a_session_id_another_user_holds_is_refused_like_any_taken_id_without_details():
    theirs = CompletedSessionFactory(session_id="incident-9", query="payments 密钥轮换失败")
    mine = client_for(UserFactory())
    mine.post("/api/chat", {"message": "order-service 内存", "session_id": "incident-8"})

    foreign = mine.post("/api/chat", {"message": "order-service 内存", "session_id": theirs.session_id})
    own = mine.post("/api/chat", {"message": "order-service 内存", "session_id": "incident-8"})

    assert foreign.status_code == own.status_code == 400
    assert foreign.data == own.data == {"session_id": [SESSION_ID_TAKEN]}
    assert "存在" not in SESSION_ID_TAKEN
    assert mine.get(trace_path(theirs.session_id)).status_code == 404
    assert DiagnosisSession.objects.filter(session_id="incident-9").get().owner == theirs.owner


def test_chat_with_an_empty_message_is_a_validation_error():
    response = client_for(UserFactory()).post("/api/chat", {"message": "   "})
    assert response.status_code == 400
    assert not DiagnosisSession.objects.exists()


def test_chat_over_the_rate_limit_answers_429_with_retry_after(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "2/min"}
    client = client_for(UserFactory())
    responses = [client.post("/api/chat", {"message": f"问题 {n}"}) for n in range(3)]
    assert [response.status_code for response in responses] == [202, 202, 429]
    retry_after = int(responses[2]["Retry-After"])
    assert 1 <= retry_after <= 60
    assert responses[2].data["detail"] == f"发起诊断过于频繁（每分钟最多 2 次），请 {retry_after} 秒后再试。"
    assert DiagnosisSession.objects.count() == 2


def test_the_rate_limit_is_per_user(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "1/min"}
    assert client_for(UserFactory()).post("/api/chat", {"message": "问题"}).status_code == 202
    assert client_for(UserFactory()).post("/api/chat", {"message": "问题"}).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_chats_with_one_session_id_start_one_session(postgres_only):
    user = UserFactory()
    responses = run_concurrently(
        lambda: client_for(user).post(
            "/api/chat", {"message": "order-service 内存", "session_id": "incident-7"}
        ),
        threads=2,
    )

    assert sorted(response.status_code for response in responses) == [202, 400]
    refused = next(response for response in responses if response.status_code == 400)
    assert refused.data == {"session_id": [SESSION_ID_TAKEN]}
    assert DiagnosisSession.objects.filter(session_id="incident-7").count() == 1


def test_token_authentication_works():
    user = UserFactory()
    CompletedSessionFactory(owner=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    response = client.get("/api/sessions")
    assert response.status_code == 200
    assert len(response.data["results"]) == 1


def test_session_list_shows_only_the_users_own_sessions_and_reviewers_see_all():
    user, other = UserFactory(), UserFactory()
    mine = CompletedSessionFactory(owner=user)
    CompletedSessionFactory(owner=other)
    own_list = client_for(user).get("/api/sessions").data
    assert set(own_list) == {"next", "previous", "results"}
    assert [row["session_id"] for row in own_list["results"]] == [mine.session_id]
    assert len(client_for(ReviewerFactory()).get("/api/sessions").data["results"]) == 2


def test_a_list_row_shows_a_bounded_query_and_the_trace_the_whole():
    user = UserFactory()
    # A tool call's arguments as stored before they were bounded.
    long = CompletedSessionFactory(owner=user, kind="tool", query="query_logs " + "x" * 1_500_000)
    short = CompletedSessionFactory(owner=user, query="只确认 HighMemoryUsage")
    client = client_for(user)

    response = client.get("/api/sessions")

    rows = {row["session_id"]: row["query"] for row in response.data["results"]}
    assert rows[short.session_id] == "只确认 HighMemoryUsage"
    assert len(rows[long.session_id]) == ROW_QUERY_CHARS
    assert rows[long.session_id].startswith("query_logs xxx")
    assert len(response.content) < 10_000
    assert len(client.get(trace_path(long.session_id)).data["session"]["query"]) == len(long.query)


def test_a_staff_flag_alone_lists_only_its_own_sessions():
    staff = StaffUserFactory()
    own = CompletedSessionFactory(owner=staff)
    CompletedSessionFactory()
    listed = client_for(staff).get("/api/sessions").data
    assert [row["session_id"] for row in listed["results"]] == [own.session_id]


def test_session_list_pages_by_cursor_newest_first_through_every_session():
    user = UserFactory()
    created = DiagnosisSessionFactory.create_batch(45, owner=user)
    client = client_for(user)
    page = client.get("/api/sessions").data
    assert page["previous"] is None
    pages = [page]
    while page["next"]:
        assert "cursor=" in page["next"]
        assert "page=" not in page["next"]
        page = client.get(page["next"]).data
        pages.append(page)
    assert [len(page["results"]) for page in pages] == [20, 20, 5]
    listed = [row["session_id"] for page in pages for row in page["results"]]
    assert listed == [session.session_id for session in reversed(created)]
    back = client.get(pages[1]["previous"]).data
    assert [row["session_id"] for row in back["results"]] == listed[:20]


def test_a_session_started_meanwhile_does_not_shift_the_next_page():
    user = UserFactory()
    created = DiagnosisSessionFactory.create_batch(25, owner=user)
    client = client_for(user)
    first = client.get("/api/sessions").data
    DiagnosisSessionFactory(owner=user)
    second = client.get(first["next"]).data
    assert [row["session_id"] for row in second["results"]] == [s.session_id for s in reversed(created[:5])]


def test_session_list_rows_carry_no_self_evaluation_and_do_not_fetch_it():
    user = UserFactory()
    session = CompletedSessionFactory(owner=user)
    client = client_for(user)
    with CaptureQueriesContext(connection) as captured:
        row = client.get("/api/sessions").data["results"][0]
    assert "self_evaluation" not in row
    assert "answer" not in row
    assert row["traceUrl"] == f"/api/sessions/{session.session_id}/trace"
    listing = next(
        query["sql"] for query in captured.captured_queries if "diagnosis_diagnosissession" in query["sql"]
    )
    assert "self_evaluation" not in listing
    trace = client.get(row["traceUrl"]).data
    assert trace["self_evaluation"] == session.self_evaluation
    assert trace["self_evaluation"]["verifier_evaluation"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=COMPLETED", {"pass", "low", "reject"}),
        ("status=RUNNING", {"running"}),
        ("output_type=DEGRADED", {"reject"}),
        ("verdict=LOW_CONFID", {"low"}),
        ("feedback=not_useful", {"low"}),
        ("verdict=PASS&feedback=useful", {"pass"}),
    ],
)
def test_session_list_filters(query, expected):
    user = UserFactory()
    CompletedSessionFactory(owner=user, session_id="pass", verdict="PASS", feedback="useful")
    CompletedSessionFactory(owner=user, session_id="low", verdict="LOW_CONFID", feedback="not_useful")
    CompletedSessionFactory(owner=user, session_id="reject", verdict="REJECT")
    DiagnosisSessionFactory(owner=user, session_id="running", status=DiagnosisSession.Status.RUNNING)
    response = client_for(user).get(f"/api/sessions?{query}")
    assert {row["session_id"] for row in response.data["results"]} == expected


def test_session_list_rejects_an_unknown_filter_value():
    response = client_for(UserFactory()).get("/api/sessions?verdict=MAYBE")
    assert response.status_code == 400
    assert "verdict" in response.data


def test_trace_json_matches_the_contract():
    session = CompletedSessionFactory(feedback="useful")
    response = client_for(session.owner).get(trace_path(session.session_id))
    assert response.status_code == 200
    trace = response.json()
    assert set(trace) == TRACE_KEYS
    assert set(trace["session"]) == TRACE_SESSION_KEYS
    assert trace["session"]["output_type"] == "NORMAL"
    assert trace["hasFeedback"] is True
    assert trace["hasVerifierEvaluation"] is True
    assert trace["hasAiOpsRuleEvaluation"] is False
    assert set(trace["self_evaluation"]) == {"verifier_evaluation", "rule_evaluation"}
    assert [step["agent"] for step in trace["steps"]] == [
        "planner",
        "executor",
        "gatekeeper",
        "verifier",
        "composer",
    ]
    (invocation,) = trace["tool_invocations"]
    assert trace["tool_invocations_page"] == {"page": 1, "page_size": 10, "total": 1, "next_page": None}
    assert set(invocation) >= INVOCATION_KEYS
    assert invocation["evidence_status"] == "supported"
    assert invocation["id"] == session.tool_invocations.get().pk


def test_trace_of_another_users_session_is_not_found_but_reviewers_may_read_it():
    session = CompletedSessionFactory()
    assert client_for(UserFactory()).get(trace_path(session.session_id)).status_code == 404
    assert client_for(StaffUserFactory()).get(trace_path(session.session_id)).status_code == 404
    assert client_for(ReviewerFactory()).get(trace_path(session.session_id)).status_code == 200


def test_a_failed_sessions_trace_shows_its_owner_the_stable_message_and_reviewers_the_cause():
    session = DiagnosisSessionFactory()
    session_execute(session_pk=session.pk, body=_broken)
    session.refresh_from_db()
    stable = f"诊断执行失败（错误编号 {session.error_id}），请稍后重试或联系管理员。"

    owner_view = client_for(session.owner).get(trace_path(session.session_id)).json()["session"]
    reviewer_view = client_for(ReviewerFactory()).get(trace_path(session.session_id)).json()["session"]

    assert (owner_view["answer"], owner_view["error"]) == (stable, stable)
    assert "AttributeError" not in str(owner_view)
    assert reviewer_view["error"] == "AttributeError: 'str' object has no attribute 'message'"


def _broken(session):
    raise AttributeError("'str' object has no attribute 'message'")


def test_trace_of_an_unknown_session_is_not_found():
    assert client_for(UserFactory()).get(trace_path("no-such-session")).status_code == 404


def test_a_trace_holds_a_page_of_tool_invocations_and_says_where_the_next_begins():
    session = DiagnosisSessionFactory()
    invocations = ToolInvocationFactory.create_batch(23, session=session)
    client = client_for(session.owner)

    pages = [client.get(trace_path(session.session_id), {"page": page}).json() for page in (1, 2, 3, 4)]

    assert [page["tool_invocations_page"] for page in pages] == [
        {"page": 1, "page_size": 10, "total": 23, "next_page": 2},
        {"page": 2, "page_size": 10, "total": 23, "next_page": 3},
        {"page": 3, "page_size": 10, "total": 23, "next_page": None},
        {"page": 4, "page_size": 10, "total": 23, "next_page": None},
    ]
    shown = [invocation["id"] for page in pages for invocation in page["tool_invocations"]]
    assert shown == [invocation.pk for invocation in invocations]
    assert client.get(trace_path(session.session_id), {"page": 0}).status_code == 400


def every_series_invocation(session, *, count: int) -> ToolInvocation:
    """A `query_promql` call recorded whole, as before the bounds held: `count` series and a ref each."""
    series = [
        {"metric": {"__name__": "node_load1", "instance": f"web-{index}:9100"}, "value": [1.7e9, "0.5"]}
        for index in range(count)
    ]
    refs = [{"raw_path": f"$.series[{index}]", "text": f"web-{index} 当前值 0.5"} for index in range(count)]
    return ToolInvocationFactory(
        session=session,
        tool_name="query_promql",
        output={"success": True, "result_type": "vector", "series": series, "message": "返回时间序列"},
        retrieval_details={"evidence_status": "supported", "evidence_refs": refs},
    )


def test_an_output_stored_beyond_the_bounds_is_read_back_within_them(settings):
    session = DiagnosisSessionFactory()
    every_series_invocation(session, count=30_000)
    limit = settings.DIAGNOSIS["OUTPUT_MAX_BYTES"]

    response = client_for(session.owner).get(trace_path(session.session_id))

    [invocation] = response.json()["tool_invocations"]
    output = invocation["output"]
    assert (output["truncated"], output["total_series"]) == (True, 30_000)
    assert stored_bytes(output) <= limit
    kept = len(output["series"])
    assert [ref["raw_path"] for ref in invocation["retrieval_details"]["evidence_refs"]] == [
        f"$.series[{index}]" for index in range(kept)
    ]
    assert len(response.content) < 2 * limit


def test_trace_reads_past_the_users_rate_are_refused_with_429(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"TRACE_RATE": "3/min"}
    session, other = CompletedSessionFactory(), CompletedSessionFactory()
    client = client_for(session.owner)

    answers = [client.get(trace_path(session.session_id)) for _ in range(4)]

    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert client_for(other.owner).get(trace_path(other.session_id)).status_code == 200


def test_feedback_useful_creates_one_case_however_often_it_is_sent():
    session = CompletedSessionFactory()
    client = client_for(session.owner)
    first = client.post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
    )
    second = client.post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
    )
    assert first.status_code == second.status_code == 200
    assert set(first.data) == {"success", "message", "caseId"}
    assert first.data["success"] is True
    assert first.data["message"].startswith("反馈已记录")
    assert first.data["caseId"] == second.data["caseId"]
    case = CaseLibrary.objects.get()
    assert str(case.case_id) == str(first.data["caseId"])
    session.refresh_from_db()
    assert session.feedback == "useful"
    assert session.status == DiagnosisSession.Status.COMPLETED


def test_feedback_not_useful_records_a_bad_case_without_a_case():
    session = CompletedSessionFactory()
    response = client_for(session.owner).post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "not_useful"}, format="json"
    )
    assert response.status_code == 200
    assert response.data["caseId"] is None
    assert BadCase.objects.get().session == session
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert session.status == DiagnosisSession.Status.COMPLETED


def test_feedback_with_another_value_is_a_validation_error():
    session = CompletedSessionFactory()
    response = client_for(session.owner).post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "maybe"}, format="json"
    )
    assert response.status_code == 400
    assert "feedback" in response.data
    session.refresh_from_db()
    assert session.feedback is None


def test_feedback_on_an_unknown_session_is_not_found():
    response = client_for(UserFactory()).post(
        "/api/feedback", {"sessionId": "no-such-session", "feedback": "useful"}, format="json"
    )
    assert response.status_code == 404


@pytest.mark.parametrize("other", [UserFactory, StaffUserFactory, ReviewerFactory])
def test_feedback_on_another_users_session_is_not_found_even_for_reviewers(other):
    session = CompletedSessionFactory(feedback="not_useful")
    response = client_for(other()).post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
    )
    assert response.status_code == 404
    assert response.data == {"detail": "会话不存在。"}
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert session.feedback == "not_useful"


@pytest.mark.parametrize("status", [DiagnosisSession.Status.PENDING, DiagnosisSession.Status.RUNNING])
def test_feedback_on_an_unfinished_session_is_refused_on_the_session_field(status):
    session = DiagnosisSessionFactory(status=status)
    response = client_for(session.owner).post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
    )
    assert response.status_code == 400
    assert response.data == {"sessionId": ["诊断仍在进行中，请在结束后再反馈。"]}
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert (session.feedback, session.status) == (None, status)


def test_useful_on_a_failed_session_is_recorded_without_a_case():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED)
    response = client_for(session.owner).post(
        "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
    )
    assert response.status_code == 200
    assert response.data == {
        "success": True,
        "message": "反馈已记录；失败的诊断不沉淀为案例",
        "caseId": None,
    }
    assert not CaseLibrary.objects.exists()
    session.refresh_from_db()
    assert (session.feedback, session.status) == ("useful", DiagnosisSession.Status.FAILED)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_useful_clicks_create_one_case(postgres_only):
    session = CompletedSessionFactory()
    responses = run_concurrently(
        lambda: client_for(session.owner).post(
            "/api/feedback", {"sessionId": session.session_id, "feedback": "useful"}, format="json"
        ),
        threads=2,
    )

    assert [response.status_code for response in responses] == [200, 200]
    assert responses[0].data["caseId"] == responses[1].data["caseId"]
    assert CaseLibrary.objects.count() == 1


def test_openapi_schema_validates_without_warnings(tmp_path: Path):
    schema_file = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(schema_file))
    schema = schema_file.read_text()
    for path in ("/api/chat:", "/api/sessions:", "/api/sessions/{session_id}/trace:", "/api/feedback:"):
        assert path in schema
    document = yaml.safe_load(schema)
    evidence_statuses = document["components"]["schemas"]["EvidenceStatusEnum"]["enum"]
    assert evidence_statuses == ["supported", "no_evidence", "failed", "not_evidence"]
    session_list = document["paths"]["/api/sessions"]["get"]
    assert "cursor" in {parameter["name"] for parameter in session_list["parameters"]}
    page_schema = session_list["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit(
        "/", 1
    )[1]
    assert set(document["components"]["schemas"][page_schema]["properties"]) == {
        "next",
        "previous",
        "results",
    }


def test_swagger_ui_is_served_from_the_app_without_a_cdn():
    client = APIClient()
    client.force_login(UserFactory())
    page = client.get("/api/docs").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert "cdn" not in page.lower()
