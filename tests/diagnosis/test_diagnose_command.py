"""`manage.py diagnose`: answer or trace JSON, exit 0 when completed, 1 when failed."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from diagnosis.models import DiagnosisSession

pytestmark = pytest.mark.django_db

QUESTION = "只确认 order-service 是否存在 HighMemoryUsage 告警"


@pytest.fixture(autouse=True)
def pinned_demo_clock(settings):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"DEMO_NOW": "2026-11-29T15:00:00+08:00"}


def test_a_completed_session_prints_its_answer_and_exits_zero(capsys):
    call_command("diagnose", QUESTION, "--session-id", "cli-memory")

    out = capsys.readouterr().out
    session = DiagnosisSession.objects.get(session_id="cli-memory")
    header, ids = out.splitlines()[:2]
    assert header == f"已核验 · 结论 PASS · 证据支撑 {session.groundedness_score:.2f}"
    assert ids == "[cli-memory] COMPLETED · NORMAL · 引擎 rules"
    assert "91%" in out
    assert DiagnosisSession.objects.get(session_id="cli-memory").owner is None


def test_json_prints_exactly_the_trace(capsys):
    call_command("diagnose", QUESTION, "--json", "--session-id", "cli-json")

    trace = json.loads(capsys.readouterr().out)
    assert trace["session"]["session_id"] == "cli-json"
    assert trace["session"]["status"] == "COMPLETED"
    assert {"hasFeedback", "hasVerifierEvaluation", "self_evaluation", "steps", "tool_invocations"} <= set(
        trace
    )
    assert trace["self_evaluation"]["rule_evaluation"]["source"] == "rule"


def test_a_failed_session_exits_one(capsys, monkeypatch):
    def broken_verifier(self, stage_input):
        raise RuntimeError("verifier exploded")

    monkeypatch.setattr("diagnosis.engines.rules.RulesEngine.verify", broken_verifier)

    with pytest.raises(SystemExit) as exited:
        call_command("diagnose", QUESTION, "--engine", "rules", "--session-id", "cli-failed")

    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert out.startswith("失败 · 结论 - · 证据支撑 -")
    assert "FAILED" in out
    assert DiagnosisSession.objects.get(session_id="cli-failed").status == DiagnosisSession.Status.FAILED


def test_an_empty_question_is_a_clear_error():
    with pytest.raises(CommandError, match="问题不能为空"):
        call_command("diagnose", "   ")


def test_a_database_never_migrated_gets_the_command_to_run_not_a_traceback(tmp_path):
    fresh = subprocess.run(
        [sys.executable, "manage.py", "diagnose", QUESTION],
        cwd=settings.BASE_DIR,
        env=os.environ | {"DATABASE_URL": f"sqlite:///{tmp_path / 'fresh.sqlite3'}", "DIAGNOSIS_DEV": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert fresh.returncode == 1
    assert "先运行 `manage.py migrate`" in fresh.stderr
    assert "Traceback" not in fresh.stderr
