"""The whole product through a real browser: ask, watch the stages, read the evidence, give
feedback, then find the case as a reviewer. Screenshots land in artifacts/screenshots/."""

import re

import pytest
from playwright.sync_api import Page, expect

from caselib.models import CaseLibrary
from diagnosis.models import DiagnosisSession
from diagnosis.services.reviewers import reviewer_group_ensure
from tests.factories import StaffUserFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"
PASSWORD = "pw-for-tests-123"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def fits_the_screen(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_engineer_asks_gets_verified_answer_and_reviewer_finds_the_case(
    live_server, chromium, queue_worker, screenshot_dir
):
    engineer = UserFactory(username="engineer")
    reviewer = StaffUserFactory(username="reviewer")
    reviewer.groups.add(reviewer_group_ensure())

    page = chromium.new_page(viewport=DESKTOP, locale="zh-CN")
    log_in(page, live_server.url, engineer.username)
    expect(page.locator("h1")).to_have_text("询问你的服务状况")

    page.fill("#message", QUESTION)
    page.click(".ask button[type=submit]")
    panel = page.locator("#panel")
    expect(panel).to_have_attribute("data-status", "PENDING")
    expect(panel.locator(".stage")).to_have_text(
        [re.compile(label) for label in ("规划", "取证", "核验引用", "校验", "撰写")]
    )
    expect(panel.locator('.stage[data-state="pending"]')).to_have_count(5)
    expect(panel.locator(".status-line")).to_have_text("排队中…")

    assert queue_worker() >= 1
    # No reload: htmx polling swaps the panel in once the worker has finished the session.
    expect(panel).to_have_attribute("data-status", "COMPLETED", timeout=15_000)
    expect(panel.locator('.stage[data-state="done"]')).to_have_count(5)
    expect(page.locator(".conversations .current .conversation-meta")).to_contain_text("已核验")
    expect(panel.locator(".output-type")).to_have_text("已核验")
    expect(panel.locator(".score")).to_contain_text("证据支撑度")
    expect(panel.locator(".answer")).to_contain_text("HighMemoryUsage")
    evidence = panel.locator(".evidence")
    expect(evidence.locator(".claim").first).to_contain_text("order-service")
    expect(evidence.locator('[data-verification="direct_observation"]').first).to_have_text("已证实")
    expect(evidence.locator(".tool-output mark").first).to_contain_text(
        "HighMemoryUsage firing service=order-service"
    )
    page.screenshot(path=screenshot_dir / "chat-desktop.png", full_page=True)

    page.set_viewport_size(PHONE)
    assert fits_the_screen(page)
    page.screenshot(path=screenshot_dir / "chat-phone.png", full_page=True)

    page.get_by_role("button", name="有用").click()
    expect(page.locator(".feedback-message")).to_contain_text("反馈已记录")
    session = DiagnosisSession.objects.get()
    assert session.feedback == "useful"
    assert session.status == DiagnosisSession.Status.COMPLETED
    case = CaseLibrary.objects.get(diagnosis_id=session.session_id)
    assert (case.service, case.alert_name) == ("order-service", "HighMemoryUsage")

    page.set_viewport_size(DESKTOP)
    page.click("text=退出登录")
    page.goto(f"{live_server.url}/admin/login/?next=/admin/caselib/caselibrary/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    # A user's "useful" is a candidate titled by its verified finding, not by the question.
    expect(page.locator("#result_list")).not_to_contain_text(QUESTION)
    expect(page.locator("#result_list")).to_contain_text("HighMemoryUsage")
    expect(page.locator("#result_list")).to_contain_text("待审核")

    page.click("#result_list a:has-text('HighMemoryUsage')")
    page.click(f"a:has-text('{session.session_id}')")
    page.locator(f"#result_list span[title='{session.session_id}']").click()
    expect(page.locator(".rounds .round")).to_have_count(1)
    expect(page.locator(".claims")).to_contain_text("直接观测")
    expect(page.locator(".claims mark").first).to_contain_text("HighMemoryUsage firing service=order-service")
    expect(page.locator(".review-form")).to_be_visible()
    expect(page.locator(".promote-form")).to_have_count(0)
    page.screenshot(path=screenshot_dir / "admin-session-change.png", full_page=True)
    page.close()
