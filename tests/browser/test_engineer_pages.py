"""The engineer's chat page in a real Chromium, desktop and 390 px, on the demo world and on the shop
world (issue 25 items 4 and 5): the examples name the world's own firing alerts, a click asks one, and
the answer reads in Chinese with no developer token. Screenshots land in artifacts/screenshots/."""

import pytest
from django.test import override_settings
from playwright.sync_api import expect

from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from tests.browser.pages import developer_tokens_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-for-tests-123"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
FIRST_EXAMPLES = {
    "demo": "只确认 order-service 是否存在 HighMemoryUsage 告警",
    "shop": "只确认 checkout 是否存在 KubePodCrashLooping 告警",
}


@pytest.fixture(params=["demo", "shop"])
def world(request, settings):
    overrides = {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}
    if request.param == "shop":
        data = world_tools("shop").source_data()
        overrides |= {
            "VOCABULARY_FILE": str(WORLDS_DIR / "shop" / "vocabulary.json"),
            **fixture_sources(data, config=settings.DIAGNOSIS),
        }
    with override_settings(DIAGNOSIS=settings.DIAGNOSIS | overrides):
        yield request.param


def test_the_engineer_asks_an_example_of_their_world_and_reads_a_chinese_answer(
    live_server, chromium, queue_worker, screenshot_dir, world
):
    engineer = UserFactory(username="engineer")
    page = chromium.new_page(viewport=DESKTOP, locale="zh-CN")
    page.goto(f"{live_server.url}/login")
    page.fill("#id_username", engineer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")

    first = FIRST_EXAMPLES[world]
    expect(page.locator("#message")).to_have_attribute("placeholder", f"例如：{first}")
    examples = page.locator("button.example")
    expect(examples.first).to_have_text(first)
    welcome = page.locator(".welcome").inner_text()
    assert ("order-service" in welcome) == (world == "demo")

    examples.first.click()
    queue_worker()
    panel = page.locator("#panel")
    expect(panel).to_have_attribute("data-status", "COMPLETED", timeout=15_000)
    expect(panel.locator("[data-verdict]").first).to_have_text("校验结论 核验通过")
    expect(panel.locator(".score-note")).to_contain_text("关键事实中有已核验证据支撑的比例")
    # The answer's evidence line is a link to its card, which shows the excerpt once.
    link = panel.locator(".answer a.ref").first
    card = panel.locator(link.get_attribute("href"))
    expect(card.locator(".tool-output")).to_be_visible()
    assert link.get_attribute("title").startswith("query_alerts #")
    text = page.locator("main").inner_text()
    assert developer_tokens_in(text) == []
    assert "触发中" in text
    page.screenshot(path=screenshot_dir / f"engineer-answer-{world}-desktop.png", full_page=True)

    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert developer_tokens_in(page.locator("main").inner_text()) == []
    page.screenshot(path=screenshot_dir / f"engineer-answer-{world}-390px.png", full_page=True)
    page.close()
