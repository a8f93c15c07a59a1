"""`manage.py llm_real` end to end, in its own process, with a stand-in for llama-server (the fake
OpenAI server's replies). The real server and model run only in `make test-llm-real` (minutes of
CPU)."""

import json
import os
import subprocess
import sys

from django.conf import settings

from tests.llama_stand_in import llama_stand_in


def test_each_question_gets_a_row_and_its_replies_are_written(tmp_path):
    server, model = llama_stand_in(tmp_path)
    replies = tmp_path / "replies"

    done = subprocess.run(
        [
            sys.executable, "manage.py", "llm_real",
            "--server", str(server), "--model", str(model),
            "--questions", "2", "--tool-calls", "prompted", "--replies", str(replies),
        ],
        cwd=settings.BASE_DIR,
        env=os.environ | {"DIAGNOSIS_DEV": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    header, *rows, passed, medians = [line for line in done.stdout.splitlines() if line.strip()]
    assert header.split()[:3] == ["#", "slots", "llm/rules"]
    assert len(rows) == 2
    for row in rows:
        _number, slots, _of, asked, verdicts, tokens, walls, unresolved, *_question = row.split()
        llm_slots, rules_slots = map(int, slots.split("/"))
        assert llm_slots >= rules_slots and int(asked) >= rules_slots
        assert verdicts == "PASS/PASS" and int(tokens) > 0 and unresolved == "0"
        assert all(float(wall) >= 0 for wall in walls.split("/"))
    assert passed.startswith("llm PASS 2/2; slots below the rules engine on 0 question(s)")
    assert "prompt tokens/session median" in medians
    written = sorted(path.name for path in replies.iterdir())
    assert written == ["question-01.json", "question-02.json"]
    record = json.loads((replies / "question-01.json").read_text())
    executor = next(step for step in record["steps"] if step["agent"] == "executor")
    # The asks' own calls (code) gathered evidence first, so the model may answer from them at once;
    # whatever it replied is kept, with the calls it made.
    assert executor["model_output"]["replies"][0]["content"]
    assert all(call["invocation_id"] for call in executor["model_output"].get("tool_calls", []))
    assert record["tool_invocations"] and all("input" in call for call in record["tool_invocations"])
