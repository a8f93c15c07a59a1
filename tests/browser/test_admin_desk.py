"""The reviewers' audit page in a real Chromium, on a desktop and a 390 px phone.

Screenshots land in artifacts/screenshots/ (admin-audit-desktop.png, admin-audit-phone.png).
"""

import pytest
from playwright.sync_api import expect

from diagnosis.services.reviewers import reviewer_group_ensure
from tests.factories import CompletedSessionFactory, DiagnosisSessionFactory, StaffUserFactory

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

    desktop_height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size(PHONE)
    page.reload()
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], widths
    # On a phone the earlier round folds to its heading line; the last stays open.
    rounds = page.locator("details.round")
    expect(rounds.first).not_to_have_attribute("open", "")
    expect(rounds.last).to_have_attribute("open", "")
    expect(rounds.first.locator(":scope > summary")).to_contain_text("第 1 轮")
    # Long evidence scrolls inside its box.
    for excerpt in page.locator("details.round[open] .tool-output").all():
        assert excerpt.evaluate("box => box.getBoundingClientRect().height") <= 7.5 * 16 + 16
    phone_height = page.evaluate("document.documentElement.scrollHeight")
    assert phone_height < desktop_height * 3, (phone_height, desktop_height)
    # A claim reads as a card on a phone, wide enough for words (not one character per line).
    claim_width = rounds.last.locator(".claims td").first.evaluate(
        "cell => cell.getBoundingClientRect().width"
    )
    assert claim_width > PHONE["width"] * 0.6
    page.screenshot(path=screenshot_dir / "admin-audit-phone.png", full_page=True)
    raw.locator("summary").click()
    expect(raw.locator("h4").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.close()


def test_the_sessions_list_reads_one_line_a_row_at_1280_px(live_server, chromium, screenshot_dir):
    reviewer = StaffUserFactory(username="list-reviewer")
    reviewer.groups.add(reviewer_group_ensure())
    long_question = "order-service 和 user-service 的内存、GC 和慢请求情况，" * 6
    CompletedSessionFactory(verdict="PASS")
    CompletedSessionFactory(verdict="LOW_CONFID", query=long_question)
    DiagnosisSessionFactory(query=f"checkout 为什么一直重启 {LONG_TOKEN}")
    page = chromium.new_page(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    page.goto(f"{live_server.url}/admin/login/?next=/admin/diagnosis/diagnosissession/")
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")

    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(3)
    page.screenshot(path=screenshot_dir / "admin-list-1280.png", full_page=True)
    # One line of text a row: no cell's text is laid out on more than one line.
    lines = page.evaluate(
        """() => [...document.querySelectorAll('#result_list tbody td, #result_list tbody th')].map(cell => {
            const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
            const tops = new Set();
            while (walker.nextNode()) {
                const range = document.createRange();
                range.selectNodeContents(walker.currentNode);
                [...range.getClientRects()].forEach(r => tops.add(Math.round(r.top)));
            }
            return tops.size;
        })"""
    )
    assert max(lines) == 1, lines
    question = rows.filter(has_text="order-service 和 user-service").locator("td.field-question span")
    expect(question).to_have_attribute("title", long_question)
    # Every column is in view, 创建时间 included: the list does not scroll sideways in its box.
    results = page.locator("#changelist .results")
    assert results.evaluate("box => box.scrollWidth <= box.clientWidth"), results.evaluate(
        "box => [box.scrollWidth, box.clientWidth]"
    )
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

    # The filter column folds away and the list takes the width.
    table_width = page.locator("#result_list").evaluate("table => table.getBoundingClientRect().width")
    page.locator(".filter-fold > summary").click()
    expect(page.locator("#changelist-filter")).not_to_be_visible()
    folded_width = page.locator("#result_list").evaluate("table => table.getBoundingClientRect().width")
    assert folded_width > table_width
    page.screenshot(path=screenshot_dir / "admin-list-1280-filters-folded.png", full_page=True)
    page.close()
