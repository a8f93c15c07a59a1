"""The pages work under the Content-Security-Policy: Chromium reports no refused script, style or image."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page

from tests.factories import CompletedSessionFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-for-tests-123"


def _log_in(page: Page, url: str, username: str) -> None:
    page.goto(url)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("[type=submit]")
    page.wait_for_load_state("networkidle")


def test_chat_admin_and_api_docs_load_without_a_policy_violation(live_server, chromium):
    engineer = UserFactory(username="engineer")
    session = CompletedSessionFactory(owner=engineer)
    get_user_model().objects.create_superuser("admin", password=PASSWORD)
    page = chromium.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{page.url}: {message.text}"))

    _log_in(page, f"{live_server.url}/login", "engineer")
    page.goto(f"{live_server.url}/c/{session.session_id}")
    page.wait_for_load_state("networkidle")
    page.click("button[value=useful]")  # htmx posts the feedback and swaps the bar in
    page.wait_for_selector("#feedback .chosen")
    page.goto(f"{live_server.url}/api/docs")
    page.wait_for_selector(".swagger-ui .info")
    page.context.clear_cookies()
    _log_in(page, f"{live_server.url}/admin/login/?next=/admin/diagnosis/diagnosissession/", "admin")
    page.goto(f"{live_server.url}/admin/diagnosis/diagnosissession/{session.pk}/change/")
    page.wait_for_load_state("networkidle")

    assert [line for line in console if "Content Security Policy" in line] == []
