"""`make test-llm-real`'s real-stack part without the real model: `manage.py llm_real` asks questions of
`tests/integration/llm_real_stack.py` of the live stack, with a stand-in for llama-server (the fake
server's honest replies), and prints each beside the rules engine."""

import contextlib
import io

import pytest
from django.core.management import call_command

from tests.integration.llm_real_stack import QUESTIONS
from tests.integration.stack import LOKI_TENANT, WORLD
from tests.llama_stand_in import llama_stand_in

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
ASKED = (QUESTIONS[0], "PostgresReplicationLag 的阈值是多少？", "billing 最近的错误日志有哪些？")


def test_the_stacks_questions_are_compared_engine_by_engine(stack, loki, tmp_path, monkeypatch):
    server, model = llama_stand_in(tmp_path)
    # The test database is already a throwaway one.
    monkeypatch.setattr("diagnosis.management.commands.llm_real.throwaway_database", contextlib.nullcontext)
    out = io.StringIO()

    call_command(
        "llm_real", "--server", str(server), "--model", str(model),
        "--prometheus", stack.prometheus_url, "--alertmanager", stack.alertmanager_url,
        "--loki", loki.url, "--loki-tenant", LOKI_TENANT,
        "--runbooks", str(WORLD / "runbooks"), "--vocabulary", str(WORLD / "vocabulary.json"),
        *(f"--question={question}" for question in ASKED),
        stdout=out,
    )  # fmt: skip

    _header, *rows, passed, totals = out.getvalue().splitlines()
    assert [row.split("  ")[-1].strip() for row in rows] == list(ASKED)
    for row in rows:
        _number, slots, _of, asked, verdicts, _tokens, _walls, unresolved, *_question = row.split()
        llm, rules = map(int, slots.split("/"))
        assert llm >= rules == int(asked) >= 1, row
        assert verdicts == "PASS/PASS" and unresolved == "0", row
    assert "slots below the rules engine on 0 question(s)" in passed
    assert "calls with an unresolved name 0" in totals
