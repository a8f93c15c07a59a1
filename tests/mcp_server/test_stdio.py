"""`manage.py mcp` on stdio, driven by the SDK's own client as an MCP client starts it: a subprocess
with its own database, every call recorded under the user it was started for."""

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

from tests.diagnosis.conftest import world_overrides
from tests.factories import UserFactory
from tests.mcp_server.support import (
    ALERT_QUESTIONS,
    over_stdio,
    stdio_database,
    structured,
    subprocess_environment,
)


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """A migrated database with the users `alice` (whose API token is returned) and `bob`."""
    path = tmp_path_factory.mktemp("stdio") / "db.sqlite3"
    return path, stdio_database(path, "alice", "bob")


@pytest.mark.parametrize("world", ["demo", "shop"])
def test_the_tools_are_listed_and_diagnose_answers_with_verdict_and_checked_citations(
    database, settings, world
):
    path, _token = database
    environment = subprocess_environment(path, world_overrides(world, diagnosis=settings.DIAGNOSIS))
    question, alert_name = ALERT_QUESTIONS[world]

    async def scenario(client):
        tools = [tool.name for tool in (await client.list_tools()).tools]
        return tools, await client.call_tool("diagnose", {"question": question})

    tools, result = over_stdio(["--user", "alice"], environment, scenario)

    assert tools == ["diagnose", "verify_claims", "query_logs", "count_logs", "lookup_runbook", "session_trace"]
    # No worker runs beside it: the stdio server ran the session in its own process.
    answer = structured(result)
    assert (answer["status"], answer["verdict"], answer["output_type"]) == ("COMPLETED", "PASS", "NORMAL")
    assert alert_name in answer["conclusions"][0]["line"]
    # Without a request there is no site address: the links are the site's own paths.
    assert answer["session_url"] == f"/c/{answer['session_id']}"
    citations = [citation for claim in answer["claims"] for citation in claim["citations"]]
    assert citations
    assert all(citation["invocation_id"] and citation["excerpt"] for citation in citations)
    assert {citation["source"] for citation in citations} == {"demo" if world == "demo" else "fixture"}
    assert any(alert_name in citation["excerpt"] for citation in citations)


def test_calls_are_recorded_under_the_user_the_server_runs_for(database, settings):
    path, alice_token = database
    environment = subprocess_environment(path, world_overrides("demo", diagnosis=settings.DIAGNOSIS))

    async def ask(client):
        return structured(await client.call_tool("query_logs", {"query": "内存"}))

    recorded = over_stdio(["--token", alice_token], environment, ask)

    def trace(client):
        return client.call_tool("session_trace", {"session_id": recorded["session_id"]})

    as_alice = structured(over_stdio(["--user", "alice"], environment, trace))
    as_bob = over_stdio(["--user", "bob"], environment, trace)
    [invocation] = as_alice["tool_invocations"]
    assert invocation["id"] == recorded["invocation_id"]
    assert invocation["retrieval_details"]["evidence_refs"] == recorded["evidence_refs"]
    assert as_bob.is_error


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([], "需要 --user USERNAME 或 --token TOKEN"),
        (["--user", "nobody"], "--user nobody：没有这个用户"),
        (["--token", "0" * 40], "--token："),
        (["--user", "retired"], "--user retired：该用户已停用"),
        (["--token", "retired-token"], "--token："),
    ],
)
def test_without_a_user_it_may_act_for_the_command_refuses_to_start(options, message):
    Token.objects.create(user=UserFactory(username="retired", is_active=False), key="retired-token")

    with pytest.raises(CommandError, match=message):
        call_command("mcp", *options)
