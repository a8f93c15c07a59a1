"""Provenance beside the evidence: the chat panel and the admin name each excerpt's
source, and say 演示数据 when the demo world answered."""

import re

import pytest
from django.urls import reverse

from tests.factories import CompletedSessionFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineer(client):
    user = UserFactory()
    client.force_login(user)
    return user


def sourced(session, source: str, location: str):
    session.tool_invocations.update(source=source, source_location=location)
    return session


def page_of(client, session) -> str:
    return client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()


def test_demo_world_evidence_is_marked_as_demo_data_beside_the_answer_and_each_excerpt(client, engineer):
    session = sourced(
        CompletedSessionFactory(owner=engineer, verdict="PASS"), "demo", "tools/data/demo_world"
    )

    page = page_of(client, session)

    assert 'class="badge tone-warn demo-data"' in page
    # Each excerpt's reference is named by its source; the raw reference and location in its tooltip.
    invocation = session.tool_invocations.get()
    assert re.search(
        rf'class="ref source tone-warn" data-source="demo" title="query_alerts #{invocation.pk} '
        rf'\$\.alerts\[0\] · tools/data/demo_world">演示数据 告警 #{invocation.pk} 第 1 条</span>',
        page,
    )


def test_evidence_from_a_team_source_names_it_and_is_not_called_demo_data(client, engineer):
    session = sourced(
        CompletedSessionFactory(owner=engineer, verdict="PASS"), "prometheus", "http://prom.internal:9090"
    )

    page = page_of(client, session)

    invocation = session.tool_invocations.get()
    assert re.search(
        rf'data-source="prometheus" title="query_alerts #{invocation.pk} \$\.alerts\[0\] · '
        rf'http://prom.internal:9090">Prometheus 告警 #{invocation.pk} 第 1 条</span>',
        page,
    )
    assert "演示数据" not in page


def test_the_admin_shows_each_invocation_source(admin_client):
    session = sourced(CompletedSessionFactory(verdict="PASS"), "loki", "http://loki:3100")

    page = admin_client.get(
        reverse("admin:diagnosis_diagnosissession_change", args=[session.pk])
    ).content.decode()

    assert "loki http://loki:3100" in page
