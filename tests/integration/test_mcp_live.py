"""The MCP server's `query_promql` against the real Prometheus, over stdio and over HTTP, driven by the
SDK's own client: offered once Prometheus is configured, answered with Prometheus's series."""

import pytest
from rest_framework.authtoken.models import Token

from diagnosis.models import DiagnosisSession
from tests.factories import UserFactory
from tests.mcp_server.support import over_http, over_stdio, stdio_database, structured, subprocess_environment

pytestmark = pytest.mark.integration

QUERY = 'node_load1{service="billing"}'


async def list_and_query(client):
    tools = [tool.name for tool in (await client.list_tools()).tools]
    return tools, await client.call_tool("query_promql", {"query": QUERY})


def assert_prometheus_series(result, prometheus_url: str) -> None:
    answer = structured(result)
    assert (answer["source"], answer["source_location"]) == ("prometheus", prometheus_url)
    assert answer["evidence_status"] == "supported"
    [series] = answer["output"]["series"]
    assert series["metric"]["service"] == "billing"
    [ref] = answer["evidence_refs"]
    assert ref["raw_path"] == "$.series[0]"
    assert ref["text"].startswith("node_load1{") and 'service="billing"' in ref["text"]
    assert "当前值 " in ref["text"]


def test_query_promql_over_stdio_answers_with_the_real_prometheus_series(stack, tmp_path):
    database = tmp_path / "db.sqlite3"
    stdio_database(database, "alice")
    environment = subprocess_environment(database) | {"DIAGNOSIS_PROMETHEUS_URL": stack.prometheus_url}

    tools, result = over_stdio(["--user", "alice"], environment, list_and_query)

    assert "query_promql" in tools
    assert_prometheus_series(result, stack.prometheus_url)


@pytest.mark.django_db(transaction=True)
def test_query_promql_over_http_is_recorded_under_the_tokens_user(stack, settings, live_server):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PROMETHEUS_URL": stack.prometheus_url, "DEMO_NOW": None}
    engineer = UserFactory()
    token = Token.objects.create(user=engineer).key

    tools, result = over_http(f"{live_server.url}/mcp", token, list_and_query)

    assert "query_promql" in tools
    assert_prometheus_series(result, stack.prometheus_url)
    session = DiagnosisSession.objects.get(session_id=result.structured_content["session_id"])
    assert (session.owner, session.kind) == (engineer, DiagnosisSession.Kind.TOOL)
    assert session.tool_invocations.get().input == {"query": QUERY}
