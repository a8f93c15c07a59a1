import pytest
from django.db import connection
from django.test import override_settings


@pytest.fixture(autouse=True, scope="session")
def fast_password_hasher():
    """PBKDF2 spends ~0.6 s on every password a factory or login sets; the tests check behaviour,
    not hashing strength, so they hash with MD5 (never a production setting)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture
def postgres_only(db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
