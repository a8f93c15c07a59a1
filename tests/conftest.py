import pytest
from django.db import connection


@pytest.fixture
def postgres_only(db):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL)")
