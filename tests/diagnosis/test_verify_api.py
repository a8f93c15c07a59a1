"""`POST /api/verify` and `GET /api/verify/{session_id}`: the check runs on the worker, the request waits
for it with a deadline; the same auth, rate and bounds as the other entry points."""

import pytest
from django_q.conf import Conf
from rest_framework.test import APIClient

from diagnosis.models import DiagnosisSession
from tests.diagnosis.verify_support import CLAIMS, HOSTILE, NO_QUERY
from tests.factories import ReviewerFactory, UserFactory
from tests.mcp_server.support import worker_runs_the_queue

# Transactional: a check is queued when its session's creation commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True)
ANSWER_KEYS = {
    "session_id",
    "session_url",
    "trace_url",
    "result_url",
    "status",
    "verdict",
    "groundedness_score",
    "counts",
    "claims",
    "message",
    "uses_demo_data",
}


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def worker(monkeypatch):
    """A worker that runs a queued check as soon as its session is committed."""
    monkeypatch.setattr(Conf, "SYNC", True)


def test_a_check_answers_200_with_each_claim_and_its_evidence(either_world, worker):
    world = CLAIMS[either_world]
    user = UserFactory()

    response = client_for(user).post(
        "/api/verify",
        {"claims": [world.true_alert, world.changed_alert, world.absent_alert, NO_QUERY]},
        format="json",
    )

    assert response.status_code == 200
    body = response.json()
    assert set(body) == ANSWER_KEYS
    assert (body["status"], body["verdict"]) == ("COMPLETED", "REJECT")
    assert body["counts"] == {"supported": 1, "contradicted": 1, "not_found": 1, "unverifiable": 1}
    assert [claim["status"] for claim in body["claims"]] == [
        "supported",
        "contradicted",
        "not_found",
        "unverifiable",
    ]
    assert world.true_value in body["claims"][1]["values"]
    [evidence] = body["claims"][0]["evidence"]
    assert set(evidence) == {"invocation_id", "tool_name", "raw_path", "excerpt", "source", "source_location"}
    session = DiagnosisSession.objects.get(session_id=body["session_id"])
    assert (session.owner, session.kind) == (user, DiagnosisSession.Kind.VERIFY)
    assert session.tool_invocations.filter(pk=evidence["invocation_id"]).exists()
    assert body["uses_demo_data"] is (either_world == "demo")
    assert body["trace_url"] == f"/api/sessions/{session.session_id}/trace"
    assert client_for(user).get(body["result_url"]).json() == body


def test_an_injected_instruction_changes_no_other_claim(either_world, worker):
    world = CLAIMS[either_world]
    claims = [world.true_alert, world.changed_alert]
    client = client_for(UserFactory())

    plain = client.post("/api/verify", {"claims": claims}, format="json").json()
    hostile = client.post(
        "/api/verify",
        {"claims": [*claims, {"text": HOSTILE[0], "alert": world.true_alert["alert"]}]},
        format="json",
    ).json()

    def judged(claim: dict) -> tuple:
        cited = [(item["raw_path"], item["excerpt"]) for item in claim["evidence"]]
        return claim["text"], claim["status"], claim["reason"], claim["values"], cited

    assert [judged(claim) for claim in hostile["claims"][:2]] == [judged(claim) for claim in plain["claims"]]
    assert hostile["claims"][2]["status"] == "unverifiable"
    assert hostile["verdict"] == plain["verdict"] == "REJECT"


def test_a_check_still_running_when_the_wait_ends_answers_202_and_its_result_url_later_200(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MCP_WAIT_SECONDS": 0}
    client = client_for(UserFactory())

    accepted = client.post("/api/verify", {"claims": [NO_QUERY]}, format="json")

    assert accepted.status_code == 202
    body = accepted.json()
    assert (body["status"], body["claims"], body["verdict"]) == ("PENDING", [], "")
    assert body["result_url"] in body["message"]
    assert client.get(body["result_url"]).status_code == 202
    assert worker_runs_the_queue() == 1
    done = client.get(body["result_url"])
    assert done.status_code == 200
    assert done.json()["claims"][0]["status"] == "unverifiable"


def test_bad_claims_answer_400_with_the_reason():
    response = client_for(UserFactory()).post(
        "/api/verify",
        {"claims": [{"text": "两种依据", "promql": "up", "alert": {"name": "X"}}]},
        format="json",
    )

    assert response.status_code == 400
    assert "只能依据一种查询" in response.json()["claims"][0]
    assert not DiagnosisSession.objects.exists()


@pytest.mark.parametrize(("method", "path"), [("post", "/api/verify"), ("get", "/api/verify/any-session")])
def test_verify_needs_an_authenticated_user(method, path):
    response = getattr(APIClient(), method)(path, {"claims": [NO_QUERY]}, format="json")

    assert response.status_code == 401
    assert not DiagnosisSession.objects.exists()


def test_another_users_check_is_not_found_but_reviewers_read_it(worker):
    body = client_for(UserFactory()).post("/api/verify", {"claims": [NO_QUERY]}, format="json").json()

    assert client_for(UserFactory()).get(body["result_url"]).status_code == 404
    assert client_for(ReviewerFactory()).get(body["result_url"]).status_code == 200


def test_a_diagnosis_session_is_no_check():
    user = UserFactory()
    session = DiagnosisSession.objects.create(query="order-service 内存", owner=user)

    assert client_for(user).get(f"/api/verify/{session.session_id}").status_code == 404


def test_checks_over_the_users_session_rate_answer_429_with_retry_after(settings, worker):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"CHAT_RATE": "1/min"}
    client = client_for(UserFactory())
    assert client.post("/api/verify", {"claims": [NO_QUERY]}, format="json").status_code == 200

    refused = client.post("/api/verify", {"claims": [NO_QUERY]}, format="json")

    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0


def test_checks_past_the_in_flight_cap_answer_429(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MCP_WAIT_SECONDS": 0, "MCP_MAX_IN_FLIGHT": 1}
    client = client_for(UserFactory())
    assert client.post("/api/verify", {"claims": [NO_QUERY]}, format="json").status_code == 202

    refused = client.post("/api/verify", {"claims": [NO_QUERY]}, format="json")

    assert refused.status_code == 429
    assert "同时最多 1 个" in refused.json()["detail"]


def test_a_checks_trace_and_admin_page_show_it(worker, client):
    reviewer = ReviewerFactory()
    body = client_for(UserFactory()).post("/api/verify", {"claims": [NO_QUERY]}, format="json").json()

    trace = client_for(reviewer).get(body["trace_url"]).json()
    client.force_login(reviewer)
    session = DiagnosisSession.objects.get(session_id=body["session_id"])
    page = client.get(f"/admin/diagnosis/diagnosissession/{session.pk}/change/")

    assert trace["self_evaluation"]["claims_verification"]["verdict"] == "LOW_CONFID"
    assert page.status_code == 200
    assert "断言核对" in page.content.decode()
