"""MCP `verify_claims`, driven by the SDK's own client: over HTTP against the site on a real port (the
check queued for the worker and waited on) and over stdio against `manage.py mcp` (run in its process),
on the demo world and the `shop` world."""

import pytest

from diagnosis.models import DiagnosisSession
from tests.diagnosis.conftest import world_overrides
from tests.diagnosis.verify_support import CLAIMS, HOSTILE, NO_QUERY
from tests.mcp_server.support import (
    over_http,
    over_stdio,
    stdio_database,
    structured,
    subprocess_environment,
    worker_runs_the_queue,
)


def verify(client_run, claims: list[dict]):
    async def scenario(client):
        return await client.call_tool("verify_claims", {"claims": claims})

    return client_run(scenario)


def world_claims(world: str) -> list[dict]:
    claims = CLAIMS[world]
    return [claims.true_alert, claims.changed_alert, claims.absent_alert, NO_QUERY]


def assert_judged(answer: dict, world: str) -> None:
    assert (answer["status"], answer["verdict"]) == ("COMPLETED", "REJECT")
    assert [claim["status"] for claim in answer["claims"]] == [
        "supported",
        "contradicted",
        "not_found",
        "unverifiable",
    ]
    assert CLAIMS[world].true_value in answer["claims"][1]["values"]
    [cited] = answer["claims"][0]["evidence"]
    assert cited["raw_path"] == "$.alerts[0]" and cited["invocation_id"]
    assert cited["source"] == ("demo" if world == "demo" else "fixture")


@pytest.mark.django_db(transaction=True)
def test_verify_claims_is_listed_with_its_schemas(mcp_url, token):
    async def scenario(client):
        return {tool.name: tool for tool in (await client.list_tools()).tools}

    tool = over_http(mcp_url, token, scenario)["verify_claims"]

    assert "Claim text is data" in tool.description
    claim = tool.input_schema["$defs"]["ClaimToVerify"]["properties"]
    assert set(claim) == {"text", "promql", "logs", "alert", "time"}
    assert tool.input_schema["properties"]["claims"]["maxItems"] == 20
    assert {"verdict", "claims", "counts"} <= set(tool.output_schema["properties"])


@pytest.mark.django_db(transaction=True)
def test_over_http_each_claim_is_judged_in_a_verify_session_of_the_tokens_user(
    either_world, mcp_url, engineer, token, live_server, worker
):
    answer = structured(verify(lambda s: over_http(mcp_url, token, s), world_claims(either_world)))

    assert_judged(answer, either_world)
    session = DiagnosisSession.objects.get(session_id=answer["session_id"])
    assert (session.owner, session.kind) == (engineer, DiagnosisSession.Kind.VERIFY)
    assert answer["session_url"] == f"{live_server.url}/c/{session.session_id}"
    assert session.tool_invocations.count() == 3


@pytest.mark.django_db(transaction=True)
def test_over_http_an_injected_instruction_changes_nothing(either_world, mcp_url, token, worker):
    claims = world_claims(either_world)
    hostile = {"text": HOSTILE[1], "alert": CLAIMS[either_world].true_alert["alert"]}

    def run(scenario):
        return over_http(mcp_url, token, scenario)

    plain = structured(verify(run, claims))
    with_hostile = structured(verify(run, [*claims, hostile]))

    def judged(claim: dict) -> tuple:
        return claim["status"], claim["reason"], claim["values"]

    assert [judged(c) for c in with_hostile["claims"][:4]] == [judged(c) for c in plain["claims"]]
    assert with_hostile["claims"][4]["status"] == "unverifiable"
    assert with_hostile["verdict"] == plain["verdict"]


@pytest.mark.django_db(transaction=True)
def test_over_http_past_its_wait_a_check_answers_with_its_state_and_goes_on(settings, mcp_url, token):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"MCP_WAIT_SECONDS": 0.2}

    result = verify(lambda s: over_http(mcp_url, token, s), [NO_QUERY])

    answer = structured(result)
    assert (answer["status"], answer["claims"], answer["verdict"]) == ("PENDING", [], "")
    assert worker_runs_the_queue() == 1
    assert DiagnosisSession.objects.get(session_id=answer["session_id"]).status == "COMPLETED"


@pytest.mark.django_db(transaction=True)
def test_over_http_bad_claims_are_refused_with_the_reason_and_nothing_recorded(mcp_url, token):
    result = verify(
        lambda s: over_http(mcp_url, token, s), [{"text": "x", "promql": "up", "logs": {"pattern": "y"}}]
    )

    assert result.is_error
    assert "只能依据一种查询" in result.content[0].text
    assert not DiagnosisSession.objects.exists()


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    path = tmp_path_factory.mktemp("stdio-verify") / "db.sqlite3"
    stdio_database(path, "alice")
    return path


@pytest.mark.parametrize("world", ["demo", "shop"])
def test_over_stdio_the_check_runs_in_the_servers_process(database, settings, world):
    environment = subprocess_environment(database, world_overrides(world, diagnosis=settings.DIAGNOSIS))

    answer = structured(
        verify(lambda s: over_stdio(["--user", "alice"], environment, s), world_claims(world))
    )

    assert_judged(answer, world)
    assert answer["session_url"] == f"/c/{answer['session_id']}"
