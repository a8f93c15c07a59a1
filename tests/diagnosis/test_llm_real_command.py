"""`manage.py llm_real` end to end, in its own process, with a stand-in for llama-server: a script
taking llama-server's arguments that serves the fake OpenAI server's replies and `/health`. The real
server and model run only in `make test-llm-real` (minutes of CPU)."""

import json
import os
import subprocess
import sys
import textwrap

from django.conf import settings

STAND_IN = textwrap.dedent(
    """\
    import argparse, json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sys.path.insert(0, {base_dir!r})
    from diagnosis.evaluation.fake_llm.server import FakeOpenAIServer

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    options, _ = parser.parse_known_args()
    fake = FakeOpenAIServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, headers, body = fake.respond(request)
            payload = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    ThreadingHTTPServer(("127.0.0.1", options.port), Handler).serve_forever()
    """
)


def test_each_question_gets_a_row_and_its_replies_are_written(tmp_path):
    server = tmp_path / "llama-server"
    server.write_text(f"#!{sys.executable}\n" + STAND_IN.format(base_dir=str(settings.BASE_DIR)))
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
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
    header, *rows = [line for line in done.stdout.splitlines() if line.strip()]
    assert header.split()[:3] == ["#", "tools", "verdict"]
    assert len(rows) == 2
    for row in rows:
        _number, tools, verdict, output_type, tokens, wall, *_question = row.split()
        assert int(tools) >= 1 and verdict == "PASS" and output_type == "NORMAL"
        assert int(tokens) > 0 and float(wall) >= 0
    written = sorted(path.name for path in replies.iterdir())
    assert written == ["question-01.json", "question-02.json"]
    record = json.loads((replies / "question-01.json").read_text())
    executor = next(step for step in record["steps"] if step["agent"] == "executor")
    # The asks' own calls (code) gathered evidence first, so the model may answer from them at once;
    # whatever it replied is kept, with the calls it made.
    assert executor["model_output"]["replies"][0]["content"]
    assert all(call["invocation_id"] for call in executor["model_output"].get("tool_calls", []))
