"""Production settings pass Django's deployment checklist.

Settings are read from the environment once, at import, so each case runs `manage.py` in a fresh
process with a production environment instead of patching settings inside this test process.
"""

import os
import subprocess
import sys

from django.conf import settings
from django.core.management.utils import get_random_secret_key

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


def test_a_management_command_prints_no_library_banner():
    result = _manage("check", DIAGNOSIS_DEV="1")

    assert result.returncode == 0, result.stderr
    assert "AXES" not in result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "System check identified no issues (0 silenced)."
