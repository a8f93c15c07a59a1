"""Settings at start-up: production passes Django's deployment checklist, a bad variable stops the start,
derived values follow what they derive from.

Settings are read from the environment once, at import, so each case of an environment runs `manage.py`
in a fresh process with a production environment instead of patching settings inside this test process;
what is a setting and no variable is changed with a settings override.
"""

import os
import subprocess
import sys

from django.conf import settings
from django.core.management.utils import get_random_secret_key

from aiops.api import AlertmanagerTokenThrottle
from aiops.rate_limits import FailedTokenThrottle
from diagnosis.services.sessions import SessionStartThrottle

DEVELOPMENT_SWITCHES = ("DJANGO_DEBUG", "DIAGNOSIS_DEV", "DJANGO_SECRET_KEY", "DJANGO_SECURE")


def _manage(*args: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in DEVELOPMENT_SWITCHES} | environment
    return subprocess.run(
        [sys.executable, str(settings.BASE_DIR / "manage.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_production_settings_pass_the_deployment_checks_without_warnings():
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SECRET_KEY=get_random_secret_key(),
        DJANGO_SECURE="1",
        DJANGO_ALLOWED_HOSTS="example.com",
    )

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_without_a_secret_key_outside_development_the_project_refuses_to_start():
    result = _manage("check", DJANGO_ALLOWED_HOSTS="example.com")

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required" in result.stderr


def _setting(expression: str, **environment: str) -> str:
    """`expression` over `settings` in a fresh process started with `environment` (development key)."""
    result = _manage(
        "shell",
        "--no-imports",
        "-c",
        f"from django.conf import settings; print({expression})",
        DIAGNOSIS_DEV="1",
        **environment,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_a_bad_variable_stops_the_start_naming_it_and_its_value():
    result = _manage("check", DIAGNOSIS_DEV="1", DIAGNOSIS_SOURCE_TIMEOUT="ten")

    assert result.returncode != 0
    assert "DIAGNOSIS_SOURCE_TIMEOUT must be a number of seconds, got 'ten'" in result.stderr


def test_the_timings_after_a_sessions_task_timeout_are_derived_from_it():
    timings = (
        'settings.Q_CLUSTER["timeout"], settings.Q_CLUSTER["retry"], '
        'settings.DIAGNOSIS["LLM_SESSION_SECONDS"], settings.DIAGNOSIS["STALE_AFTER_SECONDS"]'
    )

    assert _setting(timings) == "600 660 540 900"
    assert _setting(timings, DIAGNOSIS_Q_TIMEOUT="1200") == "1200 1260 1140 1500"


def test_notification_links_are_absolute_behind_tls_and_relative_otherwise():
    hosts = ".example.com,aiops.example.com"
    production = {"DJANGO_SECRET_KEY": get_random_secret_key(), "DJANGO_ALLOWED_HOSTS": hosts}

    assert _setting('settings.DIAGNOSIS["PUBLIC_URL"]', DJANGO_SECURE="1", **production) == (
        "https://aiops.example.com"
    )
    assert _setting('repr(settings.DIAGNOSIS["PUBLIC_URL"])', **production) == "''"


def test_a_delivery_is_bounded_like_a_source_request():
    assert _setting('settings.DIAGNOSIS["NOTIFY_TIMEOUT"]', DIAGNOSIS_SOURCE_TIMEOUT="4") == "4.0"


def _rates() -> list[tuple[int, int]]:
    """Each rate limit's (requests, seconds) as its throttle reads it: the chat's, the webhook's, failed
    tokens'."""
    throttles = (SessionStartThrottle(), AlertmanagerTokenThrottle(), FailedTokenThrottle())
    return [(throttle.num_requests, throttle.duration) for throttle in throttles]


def test_the_rate_limits_apply_the_rates_of_the_settings(settings):
    assert _rates() == [(30, 60), (120, 60), (10, 60)]

    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "CHAT_RATE": "5/hour",
        "ALERTMANAGER_RATE": "600/min",
        "ALERTMANAGER_FAILED_TOKEN_RATE": "3/day",
    }
    assert _rates() == [(5, 3600), (600, 60), (3, 86400)]


def test_rate_limits_count_in_a_shared_redis_cache_when_the_queue_is_on_redis():
    assert "LocMemCache" in _setting("settings.CACHES['default']")
    on_broker = _setting("settings.CACHES['default']", DIAGNOSIS_Q_BROKER="redis://127.0.0.1:6379/3")
    assert "RedisCache" in on_broker and "redis://127.0.0.1:6379/3" in on_broker


def test_a_management_command_prints_no_library_banner():
    result = _manage("check", DIAGNOSIS_DEV="1")

    assert result.returncode == 0, result.stderr
    assert "AXES" not in result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "System check identified no issues (0 silenced)."
