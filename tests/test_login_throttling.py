"""Wrong passwords lock the login out for a while, on the login page and the admin alike (issue 14)."""

import pytest
from django.conf import settings
from django.urls import reverse

from tests.factories import StaffUserFactory, UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "pw-for-tests-123"


def _guess_wrong(client, url: str, username: str, times: int) -> list[int]:
    return [
        client.post(url, {"username": username, "password": f"wrong-{attempt}"}).status_code
        for attempt in range(times)
    ]


def test_after_the_failure_limit_even_the_right_password_is_refused(client):
    UserFactory(username="alice")
    limit = settings.AXES_FAILURE_LIMIT

    statuses = _guess_wrong(client, reverse("login"), "alice", limit)
    locked = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})

    assert statuses[:-1] == [200] * (limit - 1)  # the form again, with its error
    assert statuses[-1] == 429
    assert locked.status_code == 429
    assert "登录已暂停" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_admin_login_is_throttled_too(client):
    StaffUserFactory(username="root-ish")
    url = reverse("admin:login")

    _guess_wrong(client, url, "root-ish", settings.AXES_FAILURE_LIMIT)
    locked = client.post(url, {"username": "root-ish", "password": PASSWORD})

    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_per_username_and_a_success_resets_the_count(client):
    UserFactory(username="alice")
    UserFactory(username="bob")
    limit = settings.AXES_FAILURE_LIMIT

    _guess_wrong(client, reverse("login"), "alice", limit - 1)
    assert client.post(reverse("login"), {"username": "alice", "password": PASSWORD}).status_code == 302
    client.logout()
    _guess_wrong(client, reverse("login"), "alice", limit - 1)
    _guess_wrong(client, reverse("login"), "bob", limit)

    assert client.post(reverse("login"), {"username": "alice", "password": PASSWORD}).status_code == 302
