"""What every response carries and what production does not show (issue 14): the Content-Security-Policy,
no browsable API, and quiet 403s."""

import logging
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from diagnosis.models import DiagnosisSession
from tests.factories import CompletedSessionFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db
INLINE_CODE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=", re.IGNORECASE)


def _directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())


def test_pages_carry_a_policy_that_allows_only_our_own_scripts_and_styles(client):
    response = client.get(reverse("login"))

    directives = _directives(response)
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"


def test_the_chat_pages_have_no_inline_script_style_or_handler_the_policy_would_block(client):
    engineer = UserFactory()
    session = CompletedSessionFactory(owner=engineer)
    DiagnosisSession.objects.create(query="还在排队的问题", owner=engineer)
    login = client.get(reverse("login"))
    client.force_login(engineer)

    pages = {
        "login": login,
        "chat": client.get(reverse("chat")),
        "conversation": client.get(reverse("chat-conversation", args=[session.session_id])),
        "panel": client.get(reverse("chat-panel", args=[session.session_id])),
    }

    for name, response in pages.items():
        assert response.status_code == 200, name
        assert INLINE_CODE.findall(response.content.decode()) == [], name


def test_the_api_answers_json_even_to_a_browser(client):
    client.force_login(UserFactory())

    response = client.get(reverse("api-sessions"), HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


def test_the_api_docs_load_their_start_up_script_from_a_url(client):
    client.force_login(UserFactory())

    page = client.get(reverse("api-docs")).content.decode()

    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page) == []


def test_a_refused_admin_page_is_logged_in_one_line_without_a_traceback(client, caplog):
    client.force_login(StaffUserFactory())  # staff, but without any permission

    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("admin:diagnosis_diagnosissession_add"))

    assert response.status_code == 403
    (record,) = [record for record in caplog.records if record.name == "django.request"]
    assert record.getMessage().startswith("Forbidden")
    assert record.exc_info is None


def test_an_anonymous_api_call_is_told_to_authenticate():
    response = APIClient().get(reverse("api-sessions"))

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
