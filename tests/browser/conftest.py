"""Playwright (sync API) driving Debian's Chromium against pytest-django's live server."""

from pathlib import Path

import pytest
from django.db import connections
from django.utils.module_loading import import_string
from django_q.brokers import get_broker
from django_q.signing import SignedPackage
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture
def chromium(monkeypatch):
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make browser)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # between browser steps are still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        # ORM calls made while Playwright's loop runs get their own connections (context-local):
        # close them here, or the test database cannot be dropped at the end of the run.
        connections.close_all()
        chromium.close()


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def queue_worker():
    """Runs what django-q2 queued, as its cluster would: take each task off the ORM broker, run it."""

    def run_queued() -> int:
        broker = get_broker()
        done = 0
        while tasks := broker.dequeue():
            for ack_id, package in tasks:
                task = SignedPackage.loads(package)
                import_string(task["func"])(*task["args"], **task["kwargs"])
                broker.acknowledge(ack_id)
                done += 1
        return done

    return run_queued
