"""From production to regression: a reviewed session exported as a case replays to the same verdict."""

import io
import zipfile

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from diagnosis.evaluation.case_export import case_export, cases_export_file
from diagnosis.evaluation.fixtures import case_load
from diagnosis.evaluation.runner import CaseResult, case_run
from diagnosis.models import DiagnosisSession
from diagnosis.services.reviewers import reviewer_group_ensure
from diagnosis.services.reviews import review_record
from diagnosis.services.sessions import session_start
from tests.factories import DiagnosisSessionFactory, StaffUserFactory

pytestmark = pytest.mark.django_db

MEMORY_QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"
CHANGELIST = reverse("admin:diagnosis_diagnosissession_changelist")
REAL_ALERT = {
    "tool_name": "query_alerts",
    "source_invocation_id": "{{inv:query_alerts}}",
    "raw_path": "$.alerts[0]",
    "evidence_excerpt": "{{ref:query_alerts:0:$.alerts[0]}}",
}
REAL_LOG = {
    "tool_name": "query_logs",
    "source_invocation_id": "{{inv:query_logs}}",
    "raw_path": "$.logs[0]",
    "evidence_excerpt": "{{ref:query_logs:0:$.logs[0]}}",
}


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


@pytest.fixture
def reviewer(client):
    user = StaffUserFactory()
    user.groups.add(reviewer_group_ensure())
    client.force_login(user)
    return user


def executor_answer(
    *bindings: dict, claim_text: str = "order-service 存在 HighMemoryUsage 告警，当前 91%"
) -> dict:
    return {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": claim_text,
                "evidence_bindings": list(bindings),
            }
        ],
        "hypotheses": [],
        "missing_info": [],
        "recommended_actions": [],
        "diagnosis_summary": "告警存在",
        "user_facing_answer": claim_text,
    }


def replay(session: DiagnosisSession, tmp_path) -> CaseResult:
    """Export the session, write it as a case folder, load it back and run it."""
    exported = case_export(session=session)
    folder = tmp_path / exported.name
    folder.mkdir()
    (folder / "case.yaml").write_text(exported.text, encoding="utf-8")
    return case_run(case_load(folder))


def test_a_reviewed_rules_session_replays_to_the_same_verdict(tmp_path):
    session = session_start(
        query="order-service 为什么频繁 Full GC？应该怎么处理", engine="rules", run_inline=True
    )
    review_record(session=session, reviewer=StaffUserFactory(), opinion="agree")

    result = replay(session, tmp_path)

    assert result.passed, result.failures
    assert result.verdict == session.verdict == "PASS"
    assert result.got == f"{session.verdict}/{session.output_type}"


def test_the_recorded_tool_outputs_become_the_cases_tool_data():
    session = session_start(
        query="order-service 为什么频繁 Full GC？应该怎么处理", engine="rules", run_inline=True
    )

    case = yaml.safe_load(case_export(session=session).text)

    logs = case["tools"]["query_logs"]
    assert logs["mode"] == "replace"
    recorded = session.tool_invocations.filter(tool_name="query_logs").order_by("pk")
    assert logs["responses"] == [{"arguments": r.input, "records": r.output["logs"]} for r in recorded]
    knowledge = session.tool_invocations.filter(tool_name="lookup_knowledge").order_by("pk")
    assert {block["block_id"] for block in case["tools"]["lookup_knowledge"]["blocks"]} == {
        block["block_id"] for invocation in knowledge for block in invocation.output["evidence_blocks"]
    }
    assert case["script"] == {}
    assert case["expect"] == {
        "verdict": "PASS",
        "output_type": "NORMAL",
        "rounds": 1,
        "gatekeeper_severity": "none",
        "failed_rules": [],
    }


def test_an_llm_session_with_tool_turns_a_repaired_reply_and_a_retry_replays_exactly(fake_llm, tmp_path):
    fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
                {
                    "tool_calls": [
                        {"name": "query_logs", "arguments": {"query": "内存", "service": "order-service"}}
                    ]
                },
                executor_answer(),  # round 1: no citation → score 0 → a second round
                '{"answer_version": "executor_evidence_v2", "claims": [',  # round 2: truncated …
                executor_answer(REAL_ALERT, REAL_LOG),  # … then repaired, citing round 1's calls
            ]
        }
    )
    session = session_start(query=MEMORY_QUESTION, engine="llm", run_inline=True)
    assert (session.verdict, session.rounds) == ("PASS", 2)

    result = replay(session, tmp_path)

    assert result.passed, result.failures
    assert (result.verdict, result.rounds) == ("PASS", 2)
    script = yaml.safe_load(case_export(session=session).text)["script"]
    assert script["executor"][:2] == [
        {"tool_calls": [{"name": "query_alerts", "arguments": '{"service": "order-service"}'}]},
        {
            "tool_calls": [
                {"name": "query_logs", "arguments": '{"query": "内存", "service": "order-service"}'}
            ]
        },
    ]
    cited = [b["source_invocation_id"] for b in script["executor"][-1]["claims"][0]["evidence_bindings"]]
    assert cited == ["{{inv:query_alerts:0}}", "{{inv:query_logs:0}}"]


def test_a_cause_questions_explanation_is_scripted_as_such_and_replays(fake_llm, tmp_path):
    explanation = {"candidate": 1, "text": "order-service 的内存持续升高可能引发频繁 Full GC"}
    fake_llm({"cause": [{"explanations": [explanation], "next_checks": ["查看 order-service 的 GC 日志"]}]})
    session = session_start(query="order-service 为什么频繁 Full GC？", engine="llm", run_inline=True)

    script = yaml.safe_load(case_export(session=session).text)["script"]

    # The executor step on the cause path answered the cause prompt's schema, not an ExecutorOutput.
    assert "executor" not in script
    assert script["cause"][0]["explanations"] == [explanation]
    result = replay(session, tmp_path)
    assert result.passed, result.failures
    assert result.verdict == session.verdict


def test_a_fabricated_citation_stays_rejected_on_replay(fake_llm, tmp_path):
    fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
                executor_answer(
                    REAL_ALERT | {"source_invocation_id": 987654}, claim_text="order-service 已确认内存泄漏"
                ),
            ]
        }
    )
    session = session_start(query=MEMORY_QUESTION, engine="llm", run_inline=True)
    assert session.verdict == "REJECT"

    result = replay(session, tmp_path)

    assert result.passed, result.failures
    assert result.verdict == "REJECT"
    assert "内存泄漏" not in result.answer


def test_the_reviewers_verdict_becomes_the_expectation_and_the_case_stays_red_until_fixed(tmp_path):
    session = session_start(query=MEMORY_QUESTION, engine="rules", run_inline=True)
    review_record(
        session=session,
        reviewer=StaffUserFactory(),
        opinion="disagree",
        expected_verdict="LOW_CONFID",
        note="告警不够",
    )

    case = yaml.safe_load(case_export(session=session).text)
    result = replay(session, tmp_path)

    assert case["expect"] == {"verdict": "LOW_CONFID"}
    assert "期望 LOW_CONFID" in case["description"] and "告警不够" in case["description"]
    assert not result.passed
    assert result.failures == ["verdict：期望 LOW_CONFID，实际 PASS"]


def test_a_session_that_did_not_complete_cannot_be_exported():
    session = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED)

    with pytest.raises(ValidationError, match="未完成"):
        case_export(session=session)


def test_one_session_downloads_as_yaml_several_as_a_zip_of_case_folders():
    first = session_start(query=MEMORY_QUESTION, engine="rules", run_inline=True, session_id="prod-1")
    second = session_start(query=MEMORY_QUESTION, engine="rules", run_inline=True, session_id="prod-2")

    single = cases_export_file(sessions=[first])
    both = cases_export_file(sessions=[first, second])

    assert (single.filename, single.content_type) == ("exported-prod-1.yaml", "application/x-yaml")
    assert yaml.safe_load(single.content)["question"] == MEMORY_QUESTION
    assert both.content_type == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(both.content)).namelist()
    assert names == ["exported-prod-1/case.yaml", "exported-prod-2/case.yaml"]


def test_the_command_writes_the_case_folder_and_never_overwrites(tmp_path):
    session_start(query=MEMORY_QUESTION, engine="rules", run_inline=True, session_id="prod-9")
    out = io.StringIO()

    call_command("export_case", "prod-9", "--out", str(tmp_path), stdout=out)

    written = tmp_path / "exported-prod-9" / "case.yaml"
    assert out.getvalue().strip() == str(written)
    assert case_load(written).expect.verdict == "PASS"
    with pytest.raises(CommandError, match="已存在"):
        call_command("export_case", "prod-9", "--out", str(tmp_path))


def test_the_command_names_an_unknown_session():
    with pytest.raises(CommandError, match="会话 nope 不存在"):
        call_command("export_case", "nope")


def test_a_session_exported_from_admin_replays_to_the_same_verdict(client, reviewer, fake_llm, tmp_path):
    fake_llm(
        {
            "executor": [
                {"tool_calls": [{"name": "query_alerts", "arguments": {"service": "order-service"}}]},
                executor_answer(REAL_ALERT | {"raw_path": None}),
            ]
        }
    )
    session = session_start(query=MEMORY_QUESTION, engine="llm", run_inline=True, session_id="prod-admin")
    review_record(session=session, reviewer=reviewer, opinion="agree")

    response = client.post(
        CHANGELIST, {"action": "export_regression_cases", "_selected_action": [session.pk]}
    )

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="exported-prod-admin.yaml"'
    folder = tmp_path / "exported-prod-admin"
    folder.mkdir()
    (folder / "case.yaml").write_bytes(response.content)
    result = case_run(case_load(folder))
    assert result.passed, result.failures
    # Round 1's citation lacks its raw_path (low_confid); round 2 cites properly.
    assert (result.verdict, result.rounds) == (session.verdict, session.rounds) == ("PASS", 2)


def test_the_admin_action_explains_why_a_session_cannot_be_exported(client, reviewer):
    failed = DiagnosisSessionFactory(status=DiagnosisSession.Status.FAILED, session_id="broken-run")

    response = client.post(
        CHANGELIST, {"action": "export_regression_cases", "_selected_action": [failed.pk]}, follow=True
    )

    assert "Content-Disposition" not in response
    assert "会话 broken-run 未完成" in response.content.decode()
