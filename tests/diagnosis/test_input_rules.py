"""One input rule at every door (issue 14): NUL bytes, oversized and too-deep JSON get 400 / 404 / 413,
never a 500, on SQLite and PostgreSQL alike (PostgreSQL text cannot hold NUL)."""

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from diagnosis.input_rules import MAX_JSON_DEPTH, InputRejected, json_loads_bounded, structure_problem
from diagnosis.models import DiagnosisSession
from feedback.models import BadCase
from tests.aiops.support import TOKEN
from tests.factories import CompletedSessionFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db


def nested(levels: int) -> str:
    return '{"message": ' + "[" * levels + "1" + "]" * levels + "}"


@pytest.fixture
def engineer(client):
    user = UserFactory()
    client.force_login(user)
    return user


@pytest.fixture
def api(engineer):
    api = APIClient()
    api.force_authenticate(engineer)
    return api


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": [1, "ok", {"b": None}]}, None),
        ({"labels": {"pod": "a\x00b"}}, "NUL"),
        ({"key\x00": 1}, "NUL"),
        (json.loads(nested(MAX_JSON_DEPTH)), "嵌套"),
        (json.loads(nested(MAX_JSON_DEPTH - 2)), None),
    ],
)
def test_the_rule_finds_nul_anywhere_and_nesting_past_the_limit(value, problem):
    found = structure_problem(value)

    assert (found is None) if problem is None else (problem in found)


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_json_nested_deeper_than_the_parser_can_recurse_is_rejected_not_crashed(levels):
    with pytest.raises(InputRejected, match="嵌套"):
        json_loads_bounded(nested(levels).encode())


def test_nan_is_not_json():
    with pytest.raises(InputRejected, match="JSON"):
        json_loads_bounded(b'{"message": NaN}')


@pytest.mark.parametrize(
    "path",
    [
        "/c/a\x00b",
        "/c/a\x00b/panel",
        "/api/sessions/a\x00b/trace",
        "/admin/diagnosis/diagnosissession/1\x00/change/",
    ],
)
def test_a_nul_in_the_path_is_no_such_page(client, engineer, path):
    assert client.get(path).status_code == 404


def test_feedback_on_a_path_with_nul_is_no_such_page(client, engineer):
    assert client.post("/c/a\x00b/feedback", {"feedback": "useful"}).status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "/api/sessions?status=%00",
        "/api/sessions?%00=1",
        "/?q=a%00",
        "/admin/diagnosis/diagnosissession/?status=%00",
    ],
)
def test_a_nul_in_the_query_string_is_a_bad_request(client, url):
    client.force_login(StaffUserFactory(is_superuser=True))

    response = client.get(url)

    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_the_chat_form_refuses_a_question_with_nul_and_starts_nothing(client, engineer):
    response = client.post(reverse("chat-ask"), {"message": "order-service\x00 内存"})

    assert response.status_code == 400
    assert "NUL" in response.content.decode()
    assert not DiagnosisSession.objects.exists()


def test_the_login_form_refuses_a_nul_without_touching_the_database(client):
    response = client.post(reverse("login"), {"username": "alice\x00", "password": "x"})

    assert response.status_code == 400


def test_a_header_or_cookie_with_nul_is_a_bad_request(client):
    assert client.get(reverse("chat"), HTTP_COOKIE="sessionid=abc\x00def").status_code == 400
    assert APIClient().get(reverse("api-sessions"), HTTP_AUTHORIZATION="Token abc\x00").status_code == 400


@pytest.mark.parametrize(
    "body",
    [
        '{"message": "order-service\\u0000 内存"}',
        '{"message": "order-service 内存", "session_id": "a\\u0000b"}',
        nested(1_000),
        nested(100_000),
    ],
)
def test_the_chat_api_refuses_nul_and_deep_json_with_400(api, body):
    response = api.post(reverse("api-chat"), body, content_type="application/json")

    assert response.status_code == 400
    assert not DiagnosisSession.objects.exists()


def test_a_json_body_over_the_upload_limit_is_a_bad_request(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"message": "内存" * 1_000})

    response = api.post(reverse("api-chat"), body, content_type="application/json")

    assert response.status_code == 400
    assert not DiagnosisSession.objects.exists()


def test_feedback_api_refuses_a_session_id_with_nul(api):
    session = CompletedSessionFactory()

    response = api.post(
        reverse("api-feedback"),
        json.dumps({"sessionId": session.session_id + "\x00", "feedback": "not_useful"}),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert not BadCase.objects.exists()


def test_the_alertmanager_webhook_refuses_deep_json_with_400(settings):
    # A NUL in its strings is replaced instead (tests/aiops/test_api.py): they are Alertmanager's labels.
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"ALERTMANAGER_TOKEN": TOKEN}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    response = client.post(
        reverse("api-alertmanager-webhook"), nested(1_000), content_type="application/json"
    )

    assert response.status_code == 400
    assert not DiagnosisSession.objects.exists()


def test_an_ordinary_question_still_passes_the_rule(api):
    response = api.post(
        reverse("api-chat"), json.dumps({"message": "order-service 内存"}), content_type="application/json"
    )

    assert response.status_code == 202
