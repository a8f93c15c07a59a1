"""An answer and a range-query chart as people see them, on a desktop and a 390 px phone: the example
question asked with one click, the output type named for what it is worth, and the chart beside its
excerpt. Screenshots land in artifacts/screenshots/."""

import pytest
from playwright.sync_api import Page, expect

from diagnosis.evaluation.fake_llm import FakeOpenAIServer
from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start
from tests.diagnosis.range_support import QUESTION, executor_citing, use_load_prometheus
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests-123"
VIEWPORTS = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
EXAMPLE = "order-service 数据库连接池是否耗尽？"


def log_in(page: Page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/login")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def fits_the_screen(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


def test_an_example_question_is_asked_with_one_click_and_its_answer_reads_at_a_glance(
    live_server, chromium, queue_worker, screenshot_dir
):
    engineer = UserFactory(username="engineer")
    page = chromium.new_page(viewport=VIEWPORTS["desktop"], locale="zh-CN")
    log_in(page, live_server.url, engineer.username)

    page.get_by_role("button", name=EXAMPLE).click()
    panel = page.locator("#panel")
    expect(panel.locator(".progress-line")).to_contain_text("已调用工具 0 次")
    assert queue_worker() >= 1
    expect(panel).to_have_attribute("data-status", "COMPLETED", timeout=15_000)

    session = DiagnosisSession.objects.get(owner=engineer)
    assert session.query == EXAMPLE
    expect(panel.locator(".output-type")).to_have_text(session.get_output_type_display())
    expect(panel.locator(".output-type")).not_to_contain_text("正常")
    for claim in panel.locator(".claim").all():
        expect(claim.locator(".claim-head .badge")).to_have_count(1)
    for name, viewport in VIEWPORTS.items():
        page.set_viewport_size(viewport)
        assert fits_the_screen(page), name
        page.screenshot(path=str(screenshot_dir / f"answer-{name}.png"), full_page=True)


def test_a_range_query_is_drawn_beside_its_excerpt(
    live_server, chromium, screenshot_dir, settings, monkeypatch
):
    use_load_prometheus(settings)
    engineer = UserFactory(username="engineer")
    with FakeOpenAIServer({"executor": executor_citing(minutes=5)}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        session = session_start(query=QUESTION, engine="llm", owner=engineer, run_inline=True)
    assert session.output_type == DiagnosisSession.OutputType.NORMAL, session.answer

    page = chromium.new_page(viewport=VIEWPORTS["desktop"], locale="zh-CN")
    log_in(page, live_server.url, engineer.username)
    page.goto(f"{live_server.url}/c/{session.session_id}")
    chart = page.locator("figure.evidence-chart")
    expect(chart).to_have_count(1)
    expect(chart.locator("svg polyline")).to_have_count(1)
    expect(chart.locator("svg circle.chart-cited")).to_have_count(3)
    expect(chart.locator("svg .chart-threshold")).to_have_count(1)
    for name, viewport in VIEWPORTS.items():
        page.set_viewport_size(viewport)
        assert fits_the_screen(page), name
        box = chart.bounding_box()
        assert box is not None and box["width"] <= viewport["width"]
        chart.locator("xpath=ancestor::li[contains(@class, 'binding')]").screenshot(
            path=str(screenshot_dir / f"range-chart-{name}.png")
        )
        page.screenshot(path=str(screenshot_dir / f"range-answer-{name}.png"), full_page=True)
