"""A cause question's answer with its timeline chart, on a desktop and a 390 px phone: on the demo world
(the alert a step at its start, the climbing GC log line) and on a second world whose CPU climbs in a
real Prometheus (Debian's). Screenshots land in artifacts/screenshots/."""

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start
from tests.browser.test_answer_pictures import VIEWPORTS, fits_the_screen, log_in
from tests.diagnosis.incident_prometheus import incident_served
from tests.factories import UserFactory
from tests.integration.stack import missing_binaries

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIXTURE = "tools.sources.fixture.FixtureSource"
NO_RECORDS = {"mode": "replace", "records": []}


def timeline_shown(
    chromium, live_server, screenshot_dir, session: DiagnosisSession, *, name: str, tracks: int
):
    page = chromium.new_page(viewport=VIEWPORTS["desktop"], locale="zh-CN")
    log_in(page, live_server.url, session.owner.username)
    page.goto(f"{live_server.url}/c/{session.session_id}")
    chart = page.locator("#panel figure.timeline")
    expect(chart).to_have_count(1)
    expect(chart.locator("svg g.timeline-track")).to_have_count(tracks)
    expect(chart.locator("svg line.timeline-onset")).to_have_count(tracks)
    expect(chart.locator(".timeline-legend li")).to_have_count(tracks)
    first_candidate = session.answer.splitlines()[0].removeprefix("结论：根因候选：").split("；")[0]
    expect(chart.locator(".timeline-legend li").first).to_have_text(first_candidate)
    for size, viewport in VIEWPORTS.items():
        page.set_viewport_size(viewport)
        assert fits_the_screen(page), size
        box = chart.bounding_box()
        assert box is not None and box["width"] <= viewport["width"]
        page.screenshot(path=str(screenshot_dir / f"timeline-{name}-{size}.png"), full_page=True)


def test_the_demo_worlds_cause_answer_draws_its_alert_and_its_climbing_line(
    live_server, chromium, screenshot_dir, settings
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}
    engineer = UserFactory(username="engineer")
    session = session_start(
        query="order-service 为什么频繁 Full GC？", engine="rules", owner=engineer, run_inline=True
    )
    assert session.answer.startswith("结论：根因候选：order-service（HighMemoryUsage"), session.answer

    timeline_shown(chromium, live_server, screenshot_dir, session, name="demo", tracks=2)


def test_a_second_worlds_cause_answer_draws_the_cpu_that_climbed_in_prometheus(
    live_server, chromium, screenshot_dir, settings
):
    if missing_binaries():
        pytest.fail(f"Debian packages missing: {', '.join(missing_binaries())}")
    engineer = UserFactory(username="engineer")
    with incident_served(["billing", "ledger-service", "invoices"], busy="ledger-service") as incident:
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "PROMETHEUS_URL": incident.url,
            "ALERTMANAGER_URL": None,
            "LOKI_URL": None,
            "RUNBOOKS_DIR": None,
            "SERVICE_LABELS": ["service"],
            "DEMO_NOW": timezone.localtime(incident.now).isoformat(),
            "ENGINE": "rules",
            "SOURCE_CLASSES": settings.DIAGNOSIS["SOURCE_CLASSES"] | {"logs": FIXTURE, "knowledge": FIXTURE},
            "FIXTURE_TOOL_DATA": {"query_logs": NO_RECORDS, "lookup_knowledge": NO_RECORDS},
            "KNOWLEDGE_SOURCES": [],
        }
        onset = timezone.localtime(incident.onset).strftime("%H:%M")
        session = session_start(
            query=f"从 {onset} 开始 billing 变慢了，根因是哪个服务？",
            engine="rules",
            owner=engineer,
            run_inline=True,
        )
    assert session.answer.startswith(f"结论：根因候选：ledger-service（CPU 使用升高，{onset}起"), (
        session.answer
    )

    timeline_shown(chromium, live_server, screenshot_dir, session, name="second-world", tracks=1)
