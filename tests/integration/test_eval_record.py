"""`manage.py eval_record` against the live stack: the world it writes replays the same answer offline."""

import contextlib
import json

import pytest
from django.core.management import call_command

from diagnosis.evaluation.fixtures import EvalCase, Expectation
from diagnosis.evaluation.recording import Recording
from diagnosis.evaluation.runner import case_run
from tests.integration.conftest import WORLD

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
QUESTION = "billing 的 node_load1 当前是多少？"


def test_a_recorded_world_answers_offline_with_the_live_value(stack, loki, tmp_path, monkeypatch):
    world = tmp_path / "live"
    # The test database is already a throwaway one.
    monkeypatch.setattr(
        "diagnosis.management.commands.eval_record.throwaway_database", contextlib.nullcontext
    )
    call_command(
        "eval_record",
        "live",
        "--out",
        str(world),
        "--question",
        QUESTION,
        "--prometheus",
        stack.prometheus_url,
        "--alertmanager",
        stack.alertmanager_url,
        "--loki",
        loki.url,
        "--loki-tenant",
        "team-a",
        "--vocabulary",
        str(WORLD / "vocabulary.json"),
    )
    recording = Recording.read(world)
    [load] = [
        json.loads(e.body)["data"]["result"]
        for e in recording.exchanges
        if e.path == "/api/v1/query" and dict(e.params)["query"].startswith("node_load1")
    ][:1]
    billing = next(s["value"][1] for s in load if s["metric"].get("service") == "billing")

    monkeypatch.setattr("diagnosis.evaluation.fixtures.WORLDS_DIR", tmp_path)
    case = EvalCase(question=QUESTION, world="live", expect=Expectation(verdict="PASS"))
    result = case_run(case)

    assert result.verdict == "PASS"
    assert any(line.startswith("结论：") and billing in line for line in result.answer.splitlines())
