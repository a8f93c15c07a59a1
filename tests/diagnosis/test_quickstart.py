import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django_q.models import Schedule

from diagnosis.models import DiagnosisSession
from diagnosis.services.accounts import engineer_account_ensure, reviewer_account_ensure
from diagnosis.services.reviewers import reviewer_group_ensure
from tests.factories import DiagnosisSessionFactory, StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def collected_static(tmp_path_factory):
    """One STATIC_ROOT for the module: collectstatic copies every file once, later runs skip them."""
    return tmp_path_factory.mktemp("static")


@pytest.fixture
def static_root(settings, collected_static):
    settings.STATIC_ROOT = collected_static
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    return settings.STATIC_ROOT


def _quickstart_setup(*options: str) -> str:
    out = StringIO()
    call_command("quickstart", "--setup-only", *options, stdout=out)
    return out.getvalue()


def test_reviewer_group_holds_view_and_review_permissions_only():
    group = reviewer_group_ensure()

    view_permissions = {
        (model._meta.app_label, f"view_{model._meta.model_name}")
        for app_label in ("diagnosis", "caselib", "feedback")
        for model in apps.get_app_config(app_label).get_models()
    }
    assert ("caselib", "view_caselibrary") in view_permissions
    assert set(group.permissions.values_list("content_type__app_label", "codename")) == view_permissions | {
        ("diagnosis", "review_session"),
        ("caselib", "review_case"),
    }


def test_reviewer_group_setup_removes_permissions_added_by_hand():
    group = reviewer_group_ensure()
    group.permissions.add(Permission.objects.get(codename="change_diagnosissession"))

    repaired = reviewer_group_ensure()

    assert repaired.pk == group.pk
    assert not repaired.permissions.filter(codename="change_diagnosissession").exists()


def test_reviewer_account_is_staff_in_the_reviewers_group_and_cannot_edit_sessions():
    account = reviewer_account_ensure(username="auditor", password="auditor-pass-2026")

    reviewer = get_user_model().objects.get(pk=account.user.pk)
    assert reviewer.is_staff and not reviewer.is_superuser
    assert list(reviewer.groups.values_list("name", flat=True)) == ["reviewers"]
    assert reviewer.has_perm("diagnosis.view_diagnosissession")
    assert reviewer.has_perm("diagnosis.review_session")
    assert not reviewer.has_perm("diagnosis.change_diagnosissession")
    assert reviewer.check_password("auditor-pass-2026")
    assert (account.password, account.generated) == ("auditor-pass-2026", False)


def test_a_configured_password_resets_an_existing_account():
    UserFactory(username="engineer")

    account = engineer_account_ensure(username="engineer", password="configured-secret-1")

    assert get_user_model().objects.get(username="engineer").check_password("configured-secret-1")
    assert not account.user.is_staff


def test_a_new_account_without_a_configured_password_gets_a_random_one():
    first = engineer_account_ensure(username="engineer", password=None)
    second = reviewer_account_ensure(username="reviewer", password=None)

    assert first.generated and second.generated
    assert len(first.password) >= 16 and first.password != second.password
    users = get_user_model().objects
    assert users.get(username="engineer").check_password(first.password)
    assert users.get(username="reviewer").check_password(second.password)


def test_an_existing_account_without_a_configured_password_keeps_its_own():
    UserFactory(username="engineer")

    account = engineer_account_ensure(username="engineer", password=None)

    assert account.password is None
    assert get_user_model().objects.get(username="engineer").check_password("pw-for-tests-123")


def test_setup_creates_the_default_accounts_with_random_passwords_and_prints_them(static_root):
    output = _quickstart_setup()

    users = get_user_model().objects
    for username in ("engineer", "reviewer"):
        password = re.search(rf"{username} / (\S+)（随机生成，只显示这一次）", output).group(1)
        assert users.get(username=username).check_password(password)
    assert "pass-2026" not in output
    assert "http://127.0.0.1:8000/" in output
    assert (static_root / "admin").is_dir()


def test_setup_again_keeps_the_passwords_and_says_how_to_reset_them(static_root):
    UserFactory(username="engineer")
    StaffUserFactory(username="reviewer")

    output = _quickstart_setup()

    assert "engineer（已存在，密码未改动；加 --engineer-password 重新运行即重置为该密码）" in output
    assert "reviewer（已存在，密码未改动；加 --reviewer-password 重新运行即重置为该密码）" in output
    users = get_user_model().objects
    assert users.get(username="engineer").check_password("pw-for-tests-123")
    assert users.get(username="reviewer").check_password("pw-for-tests-123")


def test_setup_takes_credentials_and_address_from_its_options(static_root):
    output = _quickstart_setup(
        "--engineer=alice",
        "--engineer-password=alice-secret-2026",
        "--reviewer=bob",
        "--reviewer-password=bob-secret-2026",
        "--bind=0.0.0.0:9000",
    )

    users = get_user_model().objects
    assert users.get(username="alice").check_password("alice-secret-2026")
    assert users.get(username="bob").is_staff
    assert "alice（密码取自 --engineer-password）" in output
    assert "secret-2026" not in output
    assert "http://0.0.0.0:9000/admin/" in output
    assert not users.filter(username__in=["engineer", "reviewer"]).exists()


def test_setup_is_idempotent_schedules_the_reaper_and_reaps_once(static_root):
    stuck = DiagnosisSessionFactory(status=DiagnosisSession.Status.PENDING)
    DiagnosisSession.objects.filter(pk=stuck.pk).update(created_at="2026-01-01T00:00:00Z")

    first = _quickstart_setup()
    _quickstart_setup()

    stuck.refresh_from_db()
    assert stuck.status == DiagnosisSession.Status.FAILED
    assert "已将 1 个长时间未结束的会话标记为失败" in first
    assert Schedule.objects.filter(func="diagnosis.tasks.stale_sessions_fail").count() == 1
    assert get_user_model().objects.filter(username__in=["engineer", "reviewer"]).count() == 2


@pytest.mark.parametrize("password", ["a", "password", "12345678901", "alice-the-user"])
def test_setup_refuses_a_given_password_the_validators_reject(static_root, password):
    with pytest.raises(CommandError, match="--engineer-password 不符合密码要求") as refused:
        _quickstart_setup("--engineer=alice-the-user", f"--engineer-password={password}")

    reason = str(refused.value).removeprefix("--engineer-password")
    assert len(password) == 1 or password not in reason
    assert not get_user_model().objects.filter(username="alice-the-user").exists()


@pytest.fixture(scope="module")
def prepared_database(tmp_path_factory) -> Path:
    """A SQLite file `quickstart --setup-only` has migrated once; each run below starts from a copy."""
    directory = tmp_path_factory.mktemp("quickstart")
    subprocess.run(
        [sys.executable, "manage.py", "quickstart", "--setup-only"],
        cwd=settings.BASE_DIR,
        env=_product_environment(directory / "db.sqlite3", directory / "static"),
        capture_output=True,
        check=True,
        timeout=300,
    )
    return directory


def _product_environment(database: Path, static: Path) -> dict[str, str]:
    return {
        **{
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("DIAGNOSIS_", "DATABASE_URL"))
        },
        "DIAGNOSIS_DEV": "1",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_STATIC_ROOT": str(static),
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _ignore_sigint() -> None:
    """As a non-interactive shell starts a background job (`make run &`): SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    ("stop_signal", "background"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, True)],
    ids=["ctrl-c", "sigint-to-a-background-job", "sigterm"],
)
def test_the_product_stops_with_its_worker_and_web_server_on_sigint_and_sigterm(
    prepared_database, tmp_path, stop_signal, background
):
    database = tmp_path / "db.sqlite3"
    shutil.copy(prepared_database / "db.sqlite3", database)
    port = _free_port()
    product = subprocess.Popen(
        [sys.executable, "manage.py", "quickstart", f"--bind=127.0.0.1:{port}"],
        cwd=settings.BASE_DIR,
        env=_product_environment(database, prepared_database / "static"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignore_sigint if background else None,
    )
    try:
        deadline = time.monotonic() + 120
        while not _listening(port):
            if product.poll() is not None or time.monotonic() > deadline:
                product.kill()
                pytest.fail(f"quickstart never listened on {port}: {product.communicate()[0]}")
            time.sleep(0.2)

        product.send_signal(stop_signal)

        assert product.wait(timeout=60) == 0
        assert "正在停止…" in product.stdout.read()
        assert not _listening(port)
    finally:
        # A failed run still stops its worker and web server: SIGTERM lets quickstart stop them first.
        if product.poll() is None:
            product.terminate()
            try:
                product.wait(timeout=60)
            except subprocess.TimeoutExpired:
                product.kill()
                product.wait()
