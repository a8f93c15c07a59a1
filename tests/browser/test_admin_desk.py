"""The reviewers' audit page in a real Chromium, on a desktop and a 390 px phone.

Screenshots land in artifacts/screenshots/ (admin-audit-desktop.png, admin-audit-phone.png).
"""

import pytest
from playwright.sync_api import expect

from diagnosis.services.reviewers import reviewer_group_ensure
from tests.factories import CompletedSessionFactory, StaffUserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests-123"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
# An unbroken token far wider than a phone: it must wrap, not widen the page.
LONG_TOKEN = "trace-" + "0123456789abcdef" * 8


def test_the_audit_page_reads_on_a_desktop_and_fits_a_phone(live_server, chromium, screenshot_dir):
    reviewer = StaffUserFactory(username="desk-reviewer")
    reviewer.groups.add(reviewer_group_ensure())
    session = CompletedSessionFactory(
        verdict="LOW_CONFID",
        retried=True,
        query=f"只确认 order-service 是否存在 HighMemoryUsage 告警 {LONG_TOKEN}",
    )
    page = chromium.new_page(viewport=DESKTOP, locale="zh-CN")
    page.goto(f"{live_server.url}/admin/login/?next=/admin/diagnosis/diagnosissession/{session.pk}/change/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    expect(page.locator("#site-name")).to_have_text("诊断审核台")
    expect(page.locator(".rounds .round")).to_have_count(2)
    expect(page.locator(".claims").first).to_contain_text("直接观测")
    raw = page.locator("details.raw-records")
    expect(raw).not_to_have_attribute("open", "")
    expect(raw.locator("h4").first).not_to_be_visible()
    page.screenshot(path=screenshot_dir / "admin-audit-desktop.png", full_page=True)

    page.set_viewport_size(PHONE)
    page.reload()
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    # A claim reads as a card on a phone, wide enough for words (not one character per line).
    claim_width = page.locator(".claims td").first.evaluate("cell => cell.getBoundingClientRect().width")
    assert claim_width > PHONE["width"] * 0.6
    page.screenshot(path=screenshot_dir / "admin-audit-phone.png", full_page=True)
    raw.locator("summary").click()
    expect(raw.locator("h4").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.close()
