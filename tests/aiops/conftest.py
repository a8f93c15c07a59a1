import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def fresh_webhook_rate():
    """The webhook's per-token rate lives in the cache: each test starts with none used."""
    cache.clear()
    yield
    cache.clear()
