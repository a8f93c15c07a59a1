"""An on-call engineer reads an Alertmanager report in a real browser, on a desktop and on a
390 px phone: status first, a badge per alert, links to each alert's session and back, alert names
never broken inside. Screenshots land in artifacts/screenshots/."""

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import Page, expect

from aiops.serializers import AlertmanagerNotificationSerializer
from aiops.services import aiops_run, alertmanager_notification_receive
from tests.aiops.support import DEMO_NOW, alert, notification
from tests.browser.pages import developer_tokens_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests-123"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
ALERT_NAMES = ("HighCPUUsage", "CheckoutLatencyHigh")


@pytest.fixture
def report(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ONCALL_GROUP": "oncall",
    }
    payload = notification(
        alert("HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718"),
        alert(
            "CheckoutLatencyHigh",
            "Checkout API",
            fingerprint="c0ffee0000000001",
            labels={"service": "Checkout API", "namespace": "shop", "pod": "checkout-7d9f6b5c4-x2k4m"},
        ),
    )
    serializer = AlertmanagerNotificationSerializer(data=payload)
    serializer.is_valid(raise_exception=True)
    session = alertmanager_notification_receive(notification=serializer.validated_data).session
    return aiops_run(session_pk=session.pk)


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def lines_of(page: Page, selector: str, text: str) -> int:
    """How many lines the first element matching `selector` with exactly `text` is laid out on."""
    return page.evaluate(
        """([selector, text]) => {
            const element = [...document.querySelectorAll(selector)].find(e => e.textContent.trim() === text);
            const range = document.createRange();
            range.selectNodeContents(element);
            return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
        }""",
        [selector, text],
    )


@pytest.mark.parametrize(("viewport", "name"), [(DESKTOP, "desktop"), (PHONE, "390px")])
def test_oncall_engineer_reads_the_report_and_follows_an_alert_there_and_back(
    live_server, chromium, screenshot_dir, report, viewport, name
):
    engineer = UserFactory(username="oncall-engineer")
    engineer.groups.add(Group.objects.get_or_create(name="oncall")[0])
    children = {child.alert_scope["alerts"][0]["alert_name"]: child for child in report.children.all()}

    page = chromium.new_page(viewport=viewport, locale="zh-CN")
    log_in(page, live_server.url, engineer.username)
    # The report is in the on-call engineer's sidebar although nobody owns it.
    page.click(f'.conversations a[href="/c/{report.session_id}"]')
    panel = page.locator("#panel")
    expect(panel).to_have_attribute("data-status", "COMPLETED")

    status = panel.locator(".report-status")
    expect(status).to_contain_text("总体状态")
    verified = sum(child.output_type == "NORMAL" for child in children.values())
    expect(status).to_contain_text(f"{verified} 条已核验")
    first_text = panel.evaluate(
        "p => p.querySelector('.report-status').compareDocumentPosition(p.querySelector('.answer'))"
    )
    assert first_text & 4  # the status line comes before the report text
    expect(panel.locator(".report-sources")).to_contain_text("演示数据")
    rows = panel.locator(".alert-row")
    expect(rows).to_have_count(2)
    for alert_name, child in children.items():
        row = rows.filter(has_text=alert_name)
        expect(row.locator(f'[data-verdict="{child.verdict}"]')).to_be_visible()
        assert lines_of(page, ".alert-name", alert_name) == 1
        assert lines_of(page, ".answer td", alert_name) == 1
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert developer_tokens_in(panel.inner_text()) == []
    page.screenshot(path=str(screenshot_dir / f"aiops-report-{name}.png"), full_page=True)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshot_dir / f"aiops-report-{name}-first-screen.png"))

    # To one alert's own session, and back to the report.
    rows.filter(has_text="CheckoutLatencyHigh").locator("a.alert-session").click()
    expect(page).to_have_url(f"{live_server.url}/c/{children['CheckoutLatencyHigh'].session_id}")
    expect(page.locator(".question")).to_contain_text('CheckoutLatencyHigh 告警（namespace="shop"')
    page.screenshot(path=str(screenshot_dir / f"aiops-alert-session-{name}.png"), full_page=True)
    page.click(".back-link a")
    expect(page).to_have_url(f"{live_server.url}/c/{report.session_id}")
    page.close()
