"""The rules engine end to end on the demo world: narrow, excluding, hit and no-hit questions."""

import pytest

from diagnosis.evaluation.fixtures import FIXTURE_SOURCE, WORLDS_DIR, world_tools
from diagnosis.models import DiagnosisSession
from diagnosis.services.sessions import session_start
from tests.integration.stack import free_port
from tools.source_names import DEMO_LABEL

pytestmark = pytest.mark.django_db

NORMAL = DiagnosisSession.OutputType.NORMAL


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00", "ENGINE": "rules"}


def run(question: str) -> DiagnosisSession:
    return session_start(query=question, engine="rules", run_inline=True)


def claims_of(session: DiagnosisSession) -> list[dict]:
    return session.self_evaluation["verifier_evaluation"]["executor_structured_output"]["claims"]


def test_high_cpu_narrow_question_is_confirmed_with_the_92_percent_reading():
    session = run("只确认 payment-service 当前是否存在 HighCPUUsage 告警")

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert session.output_type == NORMAL
    assert session.verdict == "PASS"
    assert any("payment-service" in c["claim_text"] and "92%" in c["claim_text"] for c in claims_of(session))
    assert "92%" in session.answer
    assert "HighMemoryUsage" not in session.answer and "SlowResponse" not in session.answer


def test_high_memory_narrow_question_passes_without_confirming_a_memory_leak():
    session = run("只确认 order-service 是否存在 HighMemoryUsage 告警")

    assert session.output_type == NORMAL
    assert "91%" in session.answer
    assert "泄漏" not in session.answer
    assert all("泄漏" not in c["claim_text"] for c in claims_of(session))


def test_slow_response_claim_binds_both_the_alert_and_the_slow_request_logs():
    session = run("只确认 user-service 是否存在 SlowResponse 告警和慢请求日志")

    assert session.output_type == NORMAL
    paths = [
        {binding["raw_path"].split("[")[0] for binding in claim["evidence_bindings"]}
        for claim in claims_of(session)
    ]
    assert {"$.alerts", "$.logs"} in paths
    assert "连接池" not in session.answer


def test_hikaricp_on_order_service_confirms_the_pool_exhaustion_logs():
    session = run("确认 order-service 是否存在 HikariCP 连接池耗尽")

    assert session.output_type == NORMAL
    assert "active=50/50" in session.answer
    assert "Connection is not available" in session.answer


def test_hikaricp_on_inventory_service_says_nothing_was_found_and_never_confirms_exhaustion():
    session = run("确认 inventory-service 是否存在 HikariCP 连接池耗尽")

    assert session.status == DiagnosisSession.Status.COMPLETED
    assert (
        "在 日志查询（关键词 HikariCP，服务 inventory-service，来源 演示数据）中未检索到匹配记录"
        in session.answer
    )
    assert "active=50/50" not in session.answer
    assert all(c["claim_type"] == "negative_observation" for c in claims_of(session))


def test_explicit_exclusions_never_reach_claims_or_answer():
    session = run("只确认 HighCPUUsage，不要分析订单123、OOM、数据库慢查询、连接池或 user-service")

    assert session.output_type == NORMAL
    texts = [c["claim_text"] for c in claims_of(session)] + [session.answer]
    for term in ("订单123", "order-123", "OOM", "数据库慢查询", "连接池", "HikariCP", "user-service"):
        assert all(term not in text for text in texts), term
    assert "payment-service" in session.answer


def test_every_stage_is_recorded_as_an_agent_step():
    session = run("只确认 order-service 是否存在 HighMemoryUsage 告警")

    agents = list(session.steps.values_list("agent", flat=True))
    assert agents == ["planner", "executor", "gatekeeper", "verifier", "composer"]
    assert session.current_stage == "done"
    assert session.tool_invocations.count() >= 1


def test_a_session_that_is_no_longer_pending_is_not_run_again():
    from diagnosis.services.session_runner import session_run
    from tests.factories import DiagnosisSessionFactory

    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED, error="已被回收")

    result = session_run(session_pk=session.pk)

    assert result.status == DiagnosisSession.Status.FAILED
    assert result.error == "已被回收"
    assert not result.steps.exists()


@pytest.mark.parametrize(("world", "service"), [("demo", "order-service"), ("shop", "checkout")])
def test_beside_a_team_source_a_question_about_logs_says_no_log_source_is_configured(settings, world, service):
    # The world's alerts stand in for the team's Alertmanager, and Prometheus is configured (down):
    # no log source, so the logs are said to have none, never read from the demo world.
    alerts = (
        world_tools(world).source_data()["query_alerts"] if world != "demo" else {"mode": "merge", "records": []}
    )
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "PROMETHEUS_URL": f"http://127.0.0.1:{free_port()}",
        "SOURCE_TIMEOUT": 1.0,
        "SOURCE_CLASSES": {"alerts": FIXTURE_SOURCE},
        "FIXTURE_TOOL_DATA": {"query_alerts": alerts},
    }
    if world != "demo":
        settings.DIAGNOSIS = settings.DIAGNOSIS | {"VOCABULARY_FILE": str(WORLDS_DIR / world / "vocabulary.json")}

    session = run(f"{service} 最近有哪些错误日志")

    assert session.verdict == "LOW_CONFID"
    assert f"未能回答：{service} 的日志 — 未配置日志源" in session.answer
    assert DEMO_LABEL not in session.answer
    assert not session.tool_invocations.filter(tool_name="query_logs").exists()
