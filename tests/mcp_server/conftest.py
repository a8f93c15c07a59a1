import pytest
from django_q.conf import Conf
from rest_framework.authtoken.models import Token

from tests.diagnosis.conftest import either_world  # noqa: F401  (the same two worlds as the pipeline's tests)
from tests.factories import UserFactory


@pytest.fixture
def mcp_url(live_server) -> str:
    """The `/mcp` endpoint of the site served on a free 127.0.0.1 port (its database is the test's)."""
    return f"{live_server.url}/mcp"


@pytest.fixture
def engineer(transactional_db):
    return UserFactory()


@pytest.fixture
def token(engineer) -> str:
    return Token.objects.create(user=engineer).key


@pytest.fixture
def worker(monkeypatch):
    """A worker for the queued sessions: the cluster's `sync` mode runs a task as soon as it is queued
    (once the session's creation commits), as a worker would, so a diagnosis ends within its wait."""
    monkeypatch.setattr(Conf, "SYNC", True)
