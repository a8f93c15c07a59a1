"""The 404 and 500 pages speak Chinese like the rest of the product."""

import pytest
from django.test import RequestFactory
from django.views.defaults import server_error

from tests.factories import UserFactory


@pytest.mark.django_db
def test_an_unknown_address_gets_the_chinese_not_found_page(client, settings):
    settings.DEBUG = False
    client.force_login(UserFactory())
    response = client.get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "页面不存在" in page
    assert "/no-such-page/" in page
    assert "Not Found" not in page


def test_a_server_error_gets_the_chinese_page_without_needing_the_database():
    response = server_error(RequestFactory().get("/"))
    page = response.content.decode()
    assert response.status_code == 500
    assert "服务器出错" in page
    assert "Server Error" not in page
